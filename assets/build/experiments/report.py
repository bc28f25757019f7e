#!/usr/bin/env python3
"""report.py TSV...: variants.sh output -> a markdown table.

Per benchmark and runtime: the minimum CPU seconds over the rounds, minus the
same runtime's minimum `-c pass` (start) CPU; the ratio to native; then the
geometric mean of the ratios per runtime and, for every build after the
first, its geometric mean against the first build on the same engine.
"""
import csv
import math
import sys
from collections import defaultdict

cpu = defaultdict(list)
order = []
benches = []
for path in sys.argv[1:]:
    with open(path) as f:
        for row in csv.DictReader(f, delimiter="\t"):
            if row["cpu_s"] == "FAIL":
                continue
            key = (row["bench"], row["runtime"])
            cpu[key].append(float(row["cpu_s"]))
            if row["runtime"] not in order:
                order.append(row["runtime"])
            if row["bench"] != "start" and row["bench"] not in benches:
                benches.append(row["bench"])

def work(b, rt):
    v = cpu.get((b, rt))
    if not v:
        return None
    return min(v) - min(cpu[("start", rt)])

wasm = [rt for rt in order if rt != "native"]
print("| benchmark | native CPU s | " + " | ".join(f"{rt} CPU s (x native)" for rt in wasm) + " |")
print("|---|---:|" + "---:|" * len(wasm))
ratios = defaultdict(list)
for b in benches:
    n = work(b, "native")
    cells = []
    for rt in wasm:
        w = work(b, rt)
        if w is None or n is None:
            cells.append("FAIL")
            continue
        ratios[rt].append(w / n)
        cells.append(f"{w:.2f} ({w / n:.2f}x)")
    print(f"| {b} | {n:.2f} | " + " | ".join(cells) + " |")
gm = lambda v: math.exp(sum(map(math.log, v)) / len(v))
print(f"| **geometric mean** ({len(benches)}) | | " + " | ".join(f"**{gm(ratios[rt]):.2f}x**" for rt in wasm) + " |")
print()
print("start (`-c pass`) CPU s, min: " + ", ".join(f"{rt} {min(cpu[('start', rt)]):.2f}" for rt in order))
builds = []
for rt in wasm:
    b = rt.split("/")[0]
    if b not in builds:
        builds.append(b)
engines = sorted({rt.split("/", 1)[1] for rt in wasm})
for b in builds[1:]:
    for e in engines:
        a, c = f"{builds[0]}/{e}", f"{b}/{e}"
        if a in ratios and c in ratios:
            rel = [y / x for x, y in zip(ratios[a], ratios[c])]
            print(f"{c} against {a}: geometric mean {gm(rel):.3f} (range {min(rel):.2f}-{max(rel):.2f})")
