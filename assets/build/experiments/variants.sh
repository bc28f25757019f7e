#!/usr/bin/env bash
# variants.sh WASMPY NAME=DIR... : pyperformance benchmarks of
# ../shared/bench/pyperf under interpreter builds side by side, on each engine,
# beside native python3, interleaved (per round and benchmark: native, then
# every build on every engine). Each run is `WASMPY exec --resident=false
# --timeout 600s --engine E --interpreter DIR bm_X.py` (metered, as wasmpy
# runs everything; compiled code cached in CACHE), timed by the benchmark itself (RESULT, wall) and by
# /usr/bin/time (the process's user+system CPU). Prints a TSV:
# round bench runtime result_s cpu_s, with a first "bench" per round, start:
# `-c pass`, the process's start-up CPU, to subtract. ENGINES (default "wazero wasmtime"),
# BENCH (default the 8 of issue 26's engine prototype), ROUNDS (default 2),
# PYPERF (default ../shared/bench/pyperf beside the checkout), NATIVE_PY,
# CACHE (wasmpy's --cache-dir for the compiled code; default a directory of
# its own under /tmp, kept, so the user cache gets no experimental builds).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: variants.sh WASMPY NAME=DIR..." >&2; exit 2; }
WASMPY=$(readlink -f "$1")
shift
HERE=$(cd "$(dirname "$0")" && pwd)
PYPERF=${PYPERF:-$(cd "$HERE/../../.." && pwd)/../shared/bench/pyperf}
[ -d "$PYPERF/bench" ] || { echo "variants.sh: no $PYPERF/bench" >&2; exit 2; }
NATIVE_PY=$(readlink -f "${NATIVE_PY:-/usr/bin/python3}")
ENGINES=${ENGINES:-"wazero wasmtime"}
CACHE=${CACHE:-/tmp/wasmpy-variants-cache}
BENCH=${BENCH:-"richards nbody float json_loads logging nqueens go deltablue"}
cd "$PYPERF/bench"
# one: CMD...: a line "result_s cpu_s" (FAIL when no RESULT; the "start"
# benchmark is `-c pass` and has no RESULT: its result_s is 0).
one() {
	local out t
	t=$(mktemp)
	if out=$(/usr/bin/time -f '%U %S' -o "$t" "$@" 2>/dev/null) && { [ "${*: -1}" = pass ] || grep -q '^RESULT ' <<<"$out"; }; then
		printf '%s %s\n' "$(awk '/^RESULT /{r = $3} END {print r + 0}' <<<"$out")" "$(awk '{print $1 + $2}' "$t")"
	else
		echo "FAIL FAIL"
	fi
	rm -f "$t"
}
# Warm each build's compiled-code cache on each engine first.
for v in "$@"; do
	for e in $ENGINES; do
		"$WASMPY" exec --resident=false --cache-dir "$CACHE" --engine "$e" --interpreter "${v#*=}" -c pass >/dev/null
	done
done
echo "$(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
printf 'round\tbench\truntime\tresult_s\tcpu_s\n'
for r in $(seq "${ROUNDS:-2}"); do
	for b in start $BENCH; do
		if [ "$b" = start ]; then args=(-c pass); else args=("bm_$b.py"); fi
		read -r res cpu < <(one "$NATIVE_PY" "${args[@]}")
		printf '%s\t%s\tnative\t%s\t%s\n' "$r" "$b" "$res" "$cpu"
		for v in "$@"; do
			for e in $ENGINES; do
				read -r res cpu < <(one "$WASMPY" exec --resident=false --cache-dir "$CACHE" --timeout 600s --engine "$e" --interpreter "${v#*=}" "${args[@]}")
				printf '%s\t%s\t%s/%s\t%s\t%s\n' "$r" "$b" "${v%%=*}" "$e" "$res" "$cpu"
			done
		done
	done
	echo "$(date -u +%FT%TZ) round $r done, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
