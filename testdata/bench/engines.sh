#!/usr/bin/env bash
# engines.sh WASMPY: the pyperformance files of ../shared/bench/pyperf run
# as its run.sh runs them (native python3 FILE; wasmpy exec --timeout 600s
# FILE), with several wasmpy configurations side by side in one run,
# interleaved per repetition (native, then each configuration), so that
# the machine's load falls on all alike. Prints a markdown table of the
# minimum seconds per benchmark, the ratio of each configuration to
# native, and their geometric means.
#   PYPERF=DIR   the pyperf checkout (default: ../shared/bench/pyperf beside the repo)
#   REPS=2       repetitions
#   BENCH="a b"  a subset
#   CONFIGS      ;-separated "name=flags" (default: the engines' table below)
set -u
WASMPY=$(readlink -f "$1")
here=$(cd "$(dirname "$0")/../.." && pwd)
PYPERF=$(readlink -f "${PYPERF:-$here/../shared/bench/pyperf}")
REPS=${REPS:-2}
PY=$(readlink -f /usr/bin/python3)
CONFIGS=${CONFIGS:-"wazero (fuel counted)=--engine wazero;wasmtime, fuel budget=--engine wasmtime --fuel 1000000000000000;wasmtime, no fuel budget=--engine wasmtime"}
IFS=';' read -r -a configs <<<"$CONFIGS"
tmp=$(mktemp -d)
export XDG_RUNTIME_DIR=$tmp WASMPY_RESIDENT=0 # no resident: each run in its own process
trap 'rm -rf "$tmp"' EXIT
names=()
if [ -n "${BENCH:-}" ]; then read -r -a names <<<"${BENCH//,/ }"; else
    for f in "$PYPERF"/bench/bm_*.py; do n=$(basename "$f" .py); names+=("${n#bm_}"); done
fi
result() { awk '$1 == "RESULT" { s = $3 } END { if (s != "") print s }' "$1"; }
declare -A best
loads=()
for name in "${names[@]}"; do
    file=$PYPERF/bench/bm_$name.py
    for ((rep = 1; rep <= REPS; rep++)); do
        loads+=("$(cut -d' ' -f1 /proc/loadavg)")
        (cd "$tmp" && timeout 900 "$PY" "$file") >"$tmp/out" 2>&1
        s=$(result "$tmp/out"); [ -n "$s" ] && best[$name,native]=$(echo "${best[$name,native]:-$s} $s" | awk '{print ($1<$2)?$1:$2}')
        for i in "${!configs[@]}"; do
            read -r -a flags <<<"${configs[$i]#*=}"
            (cd "$tmp" && timeout 900 "$WASMPY" exec --timeout 600s "${flags[@]}" "$file") >"$tmp/out" 2>&1
            s=$(result "$tmp/out")
            if [ -z "$s" ]; then echo "FAIL $name ${configs[$i]%%=*}: $(tail -n 3 "$tmp/out")" >&2; continue; fi
            best[$name,$i]=$(echo "${best[$name,$i]:-$s} $s" | awk '{print ($1<$2)?$1:$2}')
        done
    done
    echo "done $name" >&2
done
{
    printf '| benchmark | native s |'; for c in "${configs[@]}"; do printf ' %s |' "${c%%=*}"; done; echo
    printf '|---|---|'; for c in "${configs[@]}"; do printf -- '---|'; done; echo
    for name in "${names[@]}"; do
        n=${best[$name,native]:-}
        printf '| %s | %s |' "$name" "${n:-FAIL}"
        for i in "${!configs[@]}"; do
            s=${best[$name,$i]:-}
            if [ -n "$n" ] && [ -n "$s" ]; then printf ' %.2fx (%ss) |' "$(echo "$s / $n" | bc -l)" "$s"; else printf ' FAIL |'; fi
        done; echo
    done
    printf '| **geomean** | |'
    for i in "${!configs[@]}"; do
        g=$(for name in "${names[@]}"; do n=${best[$name,native]:-}; s=${best[$name,$i]:-}; [ -n "$n" ] && [ -n "$s" ] && echo "$s $n"; done |
            awk '{l += log($1/$2); k++} END {if (k) printf "%.2fx (%d)", exp(l/k), k}')
        printf ' **%s** |' "$g"
    done; echo
    echo
    echo "load average (1 min) at each repetition: min $(printf '%s\n' "${loads[@]}" | sort -n | head -1), max $(printf '%s\n' "${loads[@]}" | sort -n | tail -1); $(nproc) CPUs; REPS=$REPS (minimum shown)"
}
