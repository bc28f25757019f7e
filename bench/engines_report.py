# Reads bench/engines.sh's TSV (bench runtime rep result_s cpu_s) and prints the table:
# CPU seconds minus each runtime's print(1) process, the minimum over the rounds, ratios to native.
import sys, math, collections
wall = collections.defaultdict(lambda: collections.defaultdict(list))
cpu = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    b, rt, rep, s, c = line.split()
    if s != "FAIL":
        wall[b][rt].append(float(s)); cpu[b][rt].append(float(c))
rts = ["native", "wazero", "wasmtime"]
base = {rt: min(cpu["print1"][rt]) for rt in rts}
print("| benchmark | native CPU s | wazero CPU s | wasmtime CPU s | wazero/native | wasmtime/native | wall: wazero/native | wall: wasmtime/native |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
L = collections.defaultdict(list)
for b in sorted(cpu):
    if b == "print1": continue
    if any(not cpu[b][rt] for rt in rts):
        print(f"| {b} | FAIL |"); continue
    c = {rt: min(cpu[b][rt]) - base[rt] for rt in rts}
    w = {rt: min(wall[b][rt]) for rt in rts}
    r = [c["wazero"]/c["native"], c["wasmtime"]/c["native"], w["wazero"]/w["native"], w["wasmtime"]/w["native"]]
    for k, v in zip("abcd", r): L[k].append(math.log(v))
    print(f"| {b} | {c['native']:.3f} | {c['wazero']:.3f} | {c['wasmtime']:.3f} | {r[0]:.2f}x | {r[1]:.2f}x | {r[2]:.2f}x | {r[3]:.2f}x |")
g = {k: math.exp(sum(v)/len(v)) for k, v in L.items()}
mx = {k: math.exp(max(v)) for k, v in L.items()}
print(f"| **geometric mean** ({len(L['a'])}) | | | | **{g['a']:.2f}x** | **{g['b']:.2f}x** | {g['c']:.2f}x | {g['d']:.2f}x |")
print(f"| highest | | | | {mx['a']:.2f}x | {mx['b']:.2f}x | {mx['c']:.2f}x | {mx['d']:.2f}x |")
print()
print("print(1) whole process, CPU s (min of 5): " + ", ".join(f"{rt} {base[rt]:.3f}" for rt in rts))
