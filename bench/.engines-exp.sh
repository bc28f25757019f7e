#!/usr/bin/env bash
# The pyperformance benchmarks (../shared/bench/pyperf/bench) under native python3 and wasmpy on
# each engine (wazero; wasmtime with a fuel budget, so metered; wasmtime without one, as `exec`
# runs by default), interleaved per benchmark, with CPU time as well as the benchmarks' own wall time
# (these machines are shared: CPU time hardly changes with load, wall time does):
#
#   bench/engines.sh [WASMPY]     default bin/wasmpy; it must have been built with -tags wasmtime
#
# REPS=2 rounds per benchmark (the minimum is kept); BENCH=DIR another benchmark directory.
# Prints a markdown table (bench/engines_report.py) on stdout; the raw TSV goes to $OUT
# (default: a temporary file, named on stderr).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
W=$(readlink -f "${1:-$root/bin/wasmpy}")
B=${BENCH:-$root/../shared/bench/pyperf/bench}
if [ ! -x "$W" ] || ! [[ $("$W" --version) == *wasmtime* ]]; then
  echo "engines.sh: $W is not a wasmpy binary with the wasmtime engine (go build -tags wasmtime)" >&2
  exit 2
fi
if ! ls "$B"/bm_*.py >/dev/null 2>&1; then
  echo "engines.sh: no benchmarks in $B (set BENCH=DIR)" >&2
  exit 2
fi
PY=$(readlink -f /usr/bin/python3 2>/dev/null || command -v python3)
REPS=${REPS:-2}
OUT=${OUT:-$(mktemp)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
TIMEFORMAT='%U %S'
one() { # RUNTIME ARGS...: prints the benchmark's RESULT seconds (0 for none) and the process's CPU seconds
  local rt=$1; shift
  case $rt in
    native) { time (cd "$tmp" && timeout 900 "$PY" "$@" >"$tmp/out" 2>&1); } 2>"$tmp/t" ;;
    wasmtime-bounded) { time (cd "$tmp" && WPEXP_RESERVE=268435456 timeout 900 /tmp/wasmpy-exp exec --resident=false --timeout 600s --engine wasmtime "$@" >"$tmp/out" 2>&1); } 2>"$tmp/t" ;;
    wasmtime-fuel) { time (cd "$tmp" && timeout 900 "$W" exec --resident=false --timeout 600s --engine wasmtime --fuel 1000000000000000 "$@" >"$tmp/out" 2>&1); } 2>"$tmp/t" ;;
    *) { time (cd "$tmp" && timeout 900 "$W" exec --resident=false --timeout 600s --engine "$rt" "$@" >"$tmp/out" 2>&1); } 2>"$tmp/t" ;;
  esac
  local s
  s=$(awk '$1 == "RESULT" { s = $3 } END { if (s != "") print s }' "$tmp/out")
  printf '%s\t%s\n' "${s:-FAIL}" "$(awk '{print $1+$2}' "$tmp/t")"
}
RTS=${RTS:-native wazero wasmtime-fuel wasmtime}
echo "engines.sh: raw results in $OUT; $(uptime)" >&2
{
  for rep in 1 2 3 4 5; do for rt in $RTS; do
    printf 'print1\t%s\t%s\t0\t%s\n' "$rt" "$rep" "$(one "$rt" -c 'print(1)' | cut -f2)"
  done; done
  for f in "$B"/bm_*.py; do
    name=$(basename "$f" .py); name=${name#bm_}
    for rep in $(seq "$REPS"); do for rt in $RTS; do
      printf 'load\t%s\t%s\t0\t%s\n' "$rt" "$rep" "$(cut -d' ' -f1 /proc/loadavg)"
      printf '%s\t%s\t%s\t%s\n' "$name" "$rt" "$rep" "$(one "$rt" "$f")"
    done; done
  done
} >"$OUT"
echo "engines.sh: done; $(uptime)" >&2
python3 "$root/bench/engines_report.py" "$OUT"
