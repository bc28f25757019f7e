#!/usr/bin/env bash
# bench.sh [OUTDIR]: the tail-call experiment (see README.md): generate the
# toy interpreter with 48 and 220 fill opcodes, build each as a switch loop
# and as musttail handlers, for wasm32-wasi as the interpreter recipe builds
# CPython (clang 19 -O2 -mbulk-memory, plus -mtail-call; wasm-opt -O3; strip)
# and natively, then time them all, interleaved, under wazero and wasmtime,
# with and without our fuel instrumentation. ROUNDS (default 5) rounds.
# Needs the toolchain build.sh installs and its sysroot (WASMPY_BUILD_DIR, by
# default ~/.cache/wasmpy/build, after one interpreter build) and cgo for
# wasmtime-go.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../../.." && pwd)
OUT=${1:-/tmp/tailcall}
LLVM=/usr/lib/llvm-19/bin
SYSROOT=${WASMPY_BUILD_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/wasmpy/build}/sysroot
[ -f "$SYSROOT/lib/wasm32-wasi/libc.a" ] || { echo "bench.sh: no wasi sysroot at $SYSROOT (run an interpreter build first)" >&2; exit 2; }
WCC=("$LLVM/clang" --target=wasm32-wasi "--sysroot=$SYSROOT")
mkdir -p "$OUT"
natives=() wasms=()
for n in 48 220; do
	python3 "$HERE/gen.py" --nfill "$n" "$OUT/vm$n.c"
	for m in SWITCH TAIL; do
		"$LLVM/clang" -O2 -D "DISPATCH_$m" -o "$OUT/native_${m}_$n" "$OUT/vm$n.c"
		"${WCC[@]}" -O2 -mbulk-memory -mtail-call -D "DISPATCH_$m" -o "$OUT/${m}_$n.unopt.wasm" "$OUT/vm$n.c"
		wasm-opt -O3 -o "$OUT/${m}_$n.opt.wasm" "$OUT/${m}_$n.unopt.wasm"
		"$LLVM/llvm-strip" --strip-all -o "$OUT/${m}_$n.wasm" "$OUT/${m}_$n.opt.wasm"
		natives+=("./native_${m}_$n") wasms+=("${m}_$n.wasm")
	done
done
(cd "$ROOT" && go build -tags wasmtime -o "$OUT/run" ./assets/build/experiments/tailcall/run)
cd "$OUT"
echo "$(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
./run -engines wazero,wasmtime -fuel both -rounds "${ROUNDS:-5}" -native "$(IFS=,; echo "${natives[*]}")" "${wasms[@]}"
echo "$(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
