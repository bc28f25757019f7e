#!/usr/bin/env bash
# Before/after on a noisy machine: native python3, then wasmpy BEFORE, then wasmpy AFTER, back to
# back for each pyperformance benchmark, REPS rounds; the report gives per benchmark the median over
# rounds of each round's own ratios (bench/paired_report.py), so a slow spell of the machine hits
# the three runs of a round alike.
#
#   bench/paired.sh BEFORE AFTER > table.md      two wasmpy binaries (e.g. a worktree's build of main)
#
# REPS=5 rounds; FLAGS="--engine wasmtime" what both binaries' `exec` gets (--resident=false is
# always given); BENCH=DIR another benchmark directory; the raw rows go to $OUT (default: a temporary
# file, named on stderr).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
before=$(readlink -f "$1"); after=$(readlink -f "$2")
B=${BENCH:-$root/../shared/bench/pyperf/bench}
PY=$(readlink -f /usr/bin/python3 2>/dev/null || command -v python3)
read -r -a flags <<<"${FLAGS:---engine wasmtime}"
OUT=${OUT:-$(mktemp)}
echo "paired.sh: rows in $OUT" >&2
result() { "$@" 2>/dev/null | awk '/^RESULT/{print $3}'; }
for r in $(seq "${REPS:-5}"); do
  for f in "$B"/bm_*.py; do
    b=$(basename "$f" .py); b=${b#bm_}
    printf '%s\tnative\t%s\t%s\n' "$b" "$r" "$(result "$PY" "$f")" >>"$OUT"
    printf '%s\tbefore\t%s\t%s\n' "$b" "$r" "$(result "$before" exec --resident=false "${flags[@]}" "$f")" >>"$OUT"
    printf '%s\tafter\t%s\t%s\n' "$b" "$r" "$(result "$after" exec --resident=false "${flags[@]}" "$f")" >>"$OUT"
  done
  echo "paired.sh: round $r done" >&2
done
python3 "$root/bench/paired_report.py" "$OUT"
