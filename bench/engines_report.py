# Reads bench/engines.sh's TSV (bench runtime rep result_s cpu_s) and prints the table:
# CPU seconds minus each runtime's print(1) process, the minimum over the rounds, ratios to native,
# for every runtime the TSV has (native first).
import sys, math, collections
wall = collections.defaultdict(lambda: collections.defaultdict(list))
cpu = collections.defaultdict(lambda: collections.defaultdict(list))
rts, loads = [], []
for line in open(sys.argv[1]):
    b, rt, rep, s, c = line.split()
    if b == "load":
        loads.append(float(c)); continue
    if rt not in rts: rts.append(rt)
    if s != "FAIL":
        wall[b][rt].append(float(s)); cpu[b][rt].append(float(c))
others = [rt for rt in rts if rt != "native"]
base = {rt: min(cpu["print1"][rt]) for rt in rts}
print("| benchmark | native CPU s | " + " | ".join(f"{rt}/native CPU" for rt in others) + " | " + " | ".join(f"wall: {rt}/native" for rt in others) + " |")
print("|---|---:|" + "---:|" * (2 * len(others)))
L = collections.defaultdict(list)
for b in sorted(cpu):
    if b == "print1": continue
    if any(not cpu[b][rt] for rt in rts):
        print(f"| {b} | FAIL |"); continue
    c = {rt: min(cpu[b][rt]) - base[rt] for rt in rts}
    w = {rt: min(wall[b][rt]) for rt in rts}
    r = [c[rt]/c["native"] for rt in others] + [w[rt]/w["native"] for rt in others]
    for k, v in enumerate(r): L[k].append(math.log(v))
    print(f"| {b} | {c['native']:.3f} | " + " | ".join(f"{v:.2f}x" for v in r) + " |")
n = len(L[0])
print(f"| **geometric mean** ({n}) | | " + " | ".join(f"**{math.exp(sum(L[k])/n):.2f}x**" for k in range(len(L))) + " |")
print(f"| highest | | " + " | ".join(f"{math.exp(max(L[k])):.2f}x" for k in range(len(L))) + " |")
print()
print("print(1) whole process, CPU s (min of 5): " + ", ".join(f"{rt} {base[rt]:.3f}" for rt in rts))
if loads:
    print(f"load average (1 min) over the run: min {min(loads):.1f}, max {max(loads):.1f}")
