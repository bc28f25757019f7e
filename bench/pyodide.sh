#!/usr/bin/env bash
# Installs Pyodide (pinned) into the user cache with npm and runs bench/pyodide.mjs.
set -euo pipefail
version=0.28.3
root=$(cd "$(dirname "$0")/.." && pwd)
dir="${XDG_CACHE_HOME:-$HOME/.cache}/wasmpy/bench/pyodide-$version"
if [ ! -d "$dir/node_modules/pyodide" ]; then
  mkdir -p "$dir"
  (cd "$dir" && npm install --silent --no-audit --no-fund "pyodide@$version" >/dev/null)
fi
cp "$root/bench/pyodide.mjs" "$dir/"
cd "$root" && node "$dir/pyodide.mjs" testdata/bench/cpu.py
