#!/usr/bin/env bash
# relink.sh BASE_INTERPRETER_DIR OUTDIR [WASM_OPT_ARGS...]: the default
# interpreter's reactor link (recipes/50-cpython.sh, link_reactor) redone from
# the build's configured cross tree with other wasm-opt arguments (none: no
# wasm-opt), into OUTDIR beside BASE's python313.zip, with a manifest.json
# whose python.wasm hash is the new one, so `wasmpy exec --interpreter OUTDIR`
# runs it. With `-O3` (the recipe's) it must give BASE's python.wasm byte for
# byte: that checks the cross tree is the one BASE was built from.
# The cross tree is only read (WASMPY_BUILD_DIR, default ~/.cache/wasmpy/build).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: relink.sh BASE_INTERPRETER_DIR OUTDIR [WASM_OPT_ARGS...]" >&2; exit 2; }
BASE=$1 OUT=$2
shift 2
LLVM=/usr/lib/llvm-19/bin
WORK=${WASMPY_BUILD_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/wasmpy/build}
CROSS=$WORK/cross
WCC=("$LLVM/clang" --target=wasm32-wasi "--sysroot=$WORK/sysroot")
[ -f "$CROSS/Makefile" ] || { echo "relink.sh: no configured cross tree in $CROSS" >&2; exit 2; }
[ -f "$BASE/manifest.json" ] || { echo "relink.sh: no manifest.json in $BASE" >&2; exit 2; }
mkvar() { make -s -C "$CROSS" --no-print-directory -f Makefile -f - "print-$1" <<<'print-%: ; @printf "%s\n" "$($*)"'; }
mapfile -t exports < <(jq -r '.exports[] | select(. != "_initialize") | "-Wl,--export=" + .' "$BASE/manifest.json")
mkdir -p "$OUT"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$CROSS"
# shellcheck disable=SC2046 # Makefile values are word lists
"${WCC[@]}" -mexec-model=reactor -z stack-size=8388608 -Wl,--stack-first \
	-Wl,--initial-memory=$((20 * 1024 * 1024)) "${exports[@]}" -o "$tmp/unstripped.wasm" \
	"$(mkvar LIBRARY)" $(mkvar MODLIBS) $(mkvar LIBS) $(mkvar SYSLIBS)
if [ $# -gt 0 ]; then
	wasm-opt "$@" -o "$tmp/opt.wasm" "$tmp/unstripped.wasm"
else
	cp "$tmp/unstripped.wasm" "$tmp/opt.wasm"
fi
"$LLVM/llvm-strip" --strip-all -o "$tmp/python.wasm" "$tmp/opt.wasm"
for sec in $("$LLVM/llvm-objdump" -h "$tmp/python.wasm" | awk '$1 ~ /^[0-9]+$/ && $2 !~ /^[A-Z]+$/ {print $2}'); do
	"$LLVM/llvm-objcopy" --remove-section="$sec" "$tmp/python.wasm"
done
cp "$tmp/python.wasm" "$OUT/python.wasm"
cp "$BASE/python313.zip" "$OUT/python313.zip"
sum=$(sha256sum "$OUT/python.wasm" | cut -d' ' -f1)
jq --arg s "$sum" '.outputs["python.wasm"] = $s' "$BASE/manifest.json" >"$OUT/manifest.json"
echo "$OUT/python.wasm $sum $(stat -c %s "$OUT/python.wasm") bytes"
