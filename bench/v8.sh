#!/usr/bin/env bash
# Runs SCRIPT in the installed wasmpy interpreter's python.wasm under V8
# (Node, TurboFan only, no fuel), to compare engines on the same binary:
#
#   bench/v8.sh SCRIPT [ARGS...]       e.g. bench/v8.sh ../shared/bench/pyperf/bench/bm_nbody.py
#
# INTERP=DIR picks another interpreter directory (python.wasm, python313.zip).
set -euo pipefail
if [ $# -lt 1 ] || [ ! -f "$1" ]; then
  echo "v8.sh: ${1:+no such script: $1; }usage: bench/v8.sh SCRIPT [ARGS...]" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
interp=${INTERP:-$("$root/bin/wasmpy" setup --build-dir)}
if [ ! -f "$interp/python.wasm" ]; then
  echo "v8.sh: no interpreter directory (set INTERP=DIR holding python.wasm and python313.zip)" >&2
  exit 2
fi
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
mkdir -p "$prefix/lib"
cp "$interp/python313.zip" "$prefix/lib/" # Node's WASI follows no symlink out of a preopen
node --no-liftoff --no-warnings "$root/bench/v8.mjs" "$interp/python.wasm" "$prefix" "$@"
