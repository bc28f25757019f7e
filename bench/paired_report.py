"""The table of bench/paired.sh: per benchmark, the median over rounds of
each round's ratios (before and after to native, after to before), and their
geometric means. A round missing a result (a failed run) is left out and
counted."""
import collections
import math
import statistics
import sys

rounds = collections.defaultdict(lambda: collections.defaultdict(dict))
for path in sys.argv[1:]:
    for line in open(path):
        parts = line.split()
        if len(parts) == 4:
            bench, runtime, r, t = parts
            rounds[bench][(path, r)][runtime] = float(t)
print("| benchmark | rounds | before | after | after/before |")
print("|---|---:|---:|---:|---:|")
logs = collections.defaultdict(list)
for bench in sorted(rounds):
    whole = [x for x in rounds[bench].values() if len(x) == 3 and all(x.values())]
    if not whole:
        print(f"| {bench} | 0 | FAIL | FAIL | |")
        continue
    before = statistics.median(x["before"] / x["native"] for x in whole)
    after = statistics.median(x["after"] / x["native"] for x in whole)
    ratio = statistics.median(x["after"] / x["before"] for x in whole)
    for k, v in (("before", before), ("after", after), ("ratio", ratio)):
        logs[k].append(math.log(v))
    left = len(rounds[bench]) - len(whole)
    print(f"| {bench} | {len(whole)}{f' ({left} failed)' if left else ''} | {before:.2f}x | {after:.2f}x | {ratio - 1:+.1%} |")
g = {k: math.exp(sum(v) / len(v)) for k, v in logs.items()}
print(f"| **geometric mean** ({len(logs['ratio'])}) | | **{g['before']:.2f}x** | **{g['after']:.2f}x** | **{g['ratio'] - 1:+.1%}** |")
print(f"| highest | | {math.exp(max(logs['before'])):.2f}x | {math.exp(max(logs['after'])):.2f}x | |")
