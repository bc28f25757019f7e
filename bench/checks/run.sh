#!/usr/bin/env bash
# What a check costs under wasmtime, by kind (BENCHMARKS.md, "Where wasmtime's remaining time
# goes"): CPU seconds of whole runs of the prototype's runner on the installed core interpreter,
# plain and instrumented seven ways, interleaved, three rounds. A measurement, not a feature:
# the variants come from fuel-variants.patch (applied to a scratch worktree of this repository)
# and the runner from ../shared/prototypes/engines/wt with wt-runner.patch.
#
#   bench/checks/run.sh > checks.tsv     then the table: bench/checks/run.sh --table checks.tsv
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
if [ "${1:-}" = --table ]; then
	python3 - "$2" <<'PY'
import collections, math, sys
d = collections.defaultdict(lambda: collections.defaultdict(list)); order = []
for l in open(sys.argv[1]):
    b, n, r, t = l.split(); d[b][n].append(float(t))
    if n not in order: order.append(n)
print('| benchmark | ' + ' | '.join(order) + ' |'); print('|---|' + '---:|' * len(order))
lg = collections.defaultdict(list)
for b in d:
    p = min(d[b]['plain']); row = [b, '%.2f' % p]
    for n in order[1:]:
        x = min(d[b][n]); lg[n].append(math.log(x / p)); row.append('%.2f (+%d%%)' % (x, round((x / p - 1) * 100)))
    print('| ' + ' | '.join(row) + ' |')
print('| geometric mean over plain | | ' + ' | '.join('+%.0f%%' % ((math.exp(sum(lg[n]) / len(lg[n])) - 1) * 100) for n in order[1:]) + ' |')
PY
	exit
fi
W=${WORK:-$(mktemp -d)}
I=$("$root/bin/wasmpy" setup --build-dir)
B=$root/../shared/bench/pyperf/bench
if [ ! -x "$W/wt" ]; then
	# The patch is against internal/fuel as it was when it was written (a3420de), before the
	# checked form (fuel.InstrumentChecks) changed the same lines.
	git -C "$root" worktree add -q --detach "$W/src" a3420de
	git -C "$W/src" apply "$here/fuel-variants.patch"
	(cd "$W/src" && go build -o "$W/fuelwasm" ./cmd/fuelwasm)
	cp -r "$root/../shared/prototypes/engines/wt" "$W/wt-src" && chmod -R u+w "$W/wt-src"
	(cd "$W/wt-src" && patch -s -p1 <"$here/wt-runner.patch" && go build -o "$W/wt" .)
	mkdir -p "$W/prefix/lib" && cp "$I/python313.zip" "$W/prefix/lib/"
	"$W/fuelwasm" "$I/python.wasm" "$W/fuel.wasm" >&2
	FUELTRAP=1 "$W/fuelwasm" "$I/python.wasm" "$W/fueltrap.wasm" >&2
	CHECKONLY=1 CHECKTRAP=1 "$W/fuelwasm" "$I/python.wasm" "$W/checktrap.wasm" >&2
	MEM1=1 FUELTRAP=1 "$W/fuelwasm" "$I/python.wasm" "$W/mem1trap.wasm" >&2
fi
echo "run.sh: work dir $W" >&2
for b in ${BENCHES:-json_loads regex_effbot spectral_norm logging richards chaos deepcopy nqueens}; do for r in 1 2 3; do
	for m in plain:$I/python.wasm::0:0 epoch:$I/python.wasm:-epoch:0:0 fuelcall:$W/fuel.wasm:-fuel:0:1 fuelslices:$W/fuel.wasm:-fuel:0:0 \
		fueltrap:$W/fueltrap.wasm:-fuel:0:1 checktrap:$W/checktrap.wasm:-fuel:0:1 mem1trap:$W/mem1trap.wasm:-fuel:1:1; do
		IFS=: read -r n w f m1 big <<<"$m"
		MEM1=$m1 BIGFUEL=$big /usr/bin/time -o "$W/t" -f "%U %S" "$W/wt" -q $f -wasm "$w" -prefix "$W/prefix" -cache "$W/$n${f:-}.cwasm" "$B/bm_$b.py" >/dev/null
		printf '%s\t%s\t%s\t%s\n' "$b" "$n" "$r" "$(awk '{print $1+$2}' "$W/t")"
	done
done; done
