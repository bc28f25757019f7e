#!/usr/bin/env bash
# Take again the profile the wasm build is optimised with (cpython.proftext.xz,
# see README.md): a native build of the patched CPython source with clang's
# front-end instrumentation runs the benchmarks in bench/ (one loop each),
# and their counts, merged, are written here as xz-compressed text.
#
#   assets/build/pgo/make-profile.sh [WORK]
#
# WORK is build.sh's work dir (default: WASMPY_BUILD_DIR, else the user
# cache's), after a build: its src/python is the patched source. Needs clang-19
# and its native profile runtime (Debian: libclang-rt-19-dev). About 5 minutes
# on 2 cores.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=${1:-${WASMPY_BUILD_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/wasmpy/build}}
LLVM=/usr/lib/llvm-19/bin
[ -f "$WORK/src/python/configure" ] || { echo "make-profile.sh: no patched source in $WORK/src/python: run build.sh first" >&2; exit 2; }
[ -f /usr/lib/llvm-19/lib/clang/19/lib/linux/libclang_rt.profile-x86_64.a ] ||
	{ echo "make-profile.sh: clang's profile runtime is missing: apt-get install libclang-rt-19-dev" >&2; exit 3; }
TRAIN=(chaos deltablue deepcopy float go json_dumps logging pickle_pure_python pidigits regex_v8 richards generators)
# The modules the native build skips, as recipes/50-cpython.sh's.
SKIP=(_bz2 _ctypes _ctypes_test _curses _curses_panel _dbm _decimal _gdbm _hashlib _lzma _sqlite3 _ssl
	_tkinter _uuid readline _codecs_cn _codecs_hk _codecs_iso2022 _codecs_jp _codecs_kr _codecs_tw _multibytecodec)

# A sibling of src/, configured through a relative path as the cross build
# is: the profile names a static function by its source path as compiled,
# ../src/python/... in both. Like the wasm build, no computed gotos (the
# interpreter loop keeps the same source shape) and no pymalloc.
B=$WORK/pgo-native
rm -rf "$B" && mkdir -p "$B" && cd "$B"
args=(--without-ensurepip --disable-test-modules --without-computed-gotos --without-pymalloc
	"CC=$LLVM/clang" "OPT=-DNDEBUG -O2" CFLAGS_NODIST=-fprofile-instr-generate LDFLAGS_NODIST=-fprofile-instr-generate)
for m in "${SKIP[@]}"; do args+=("py_cv_module_$m=n/a"); done
export LC_ALL=C TZ=UTC PYTHONHASHSEED=0
../src/python/configure -C "${args[@]}" >configure.log 2>&1
LLVM_PROFILE_FILE=/dev/null make -j"$(nproc)" all >make.log 2>&1

# One process per benchmark, in an empty environment, without address
# randomisation; %m merges each binary's counts into one file.
mkdir -p "$B/train/raw"
for b in "${TRAIN[@]}"; do
	(cd "$B/train" && env -i PATH=/usr/bin:/bin LC_ALL=C TZ=UTC PYTHONHASHSEED=0 \
		LLVM_PROFILE_FILE="$B/train/raw/%m.profraw" setarch -R "$B/python" -I "$HERE/bench/bm_$b.py" quick >/dev/null)
done
"$LLVM/llvm-profdata" merge -o "$B/train/cpython.profdata" "$B"/train/raw/*.profraw
"$LLVM/llvm-profdata" merge --text -o "$B/train/cpython.proftext" "$B/train/cpython.profdata"
xz -9 -T1 -c "$B/train/cpython.proftext" >"$HERE/cpython.proftext.xz"
echo "make-profile.sh: wrote $HERE/cpython.proftext.xz; rebuild with build.sh and update the lock (WASMPY_UPDATE_LOCK=1)"
