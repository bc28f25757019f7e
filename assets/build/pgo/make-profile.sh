#!/usr/bin/env bash
# Take again the profile the wasm build is optimised with (cpython.proftext.xz,
# see README.md): a native build of the patched CPython source with clang's
# front-end instrumentation runs twelve pyperformance benchmarks (one loop
# each), and their counts, merged, are written here as xz-compressed text.
#
#   assets/build/pgo/make-profile.sh [WORK]
#
# The benchmarks are third-party code, so they are not in this repository:
# they are read from PYPERF_BENCH (default: ../shared/bench/pyperf/bench
# beside the checkout) and checked against the SHA-256s below.
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
PYPERF_BENCH=${PYPERF_BENCH:-$HERE/../../../../shared/bench/pyperf/bench}
# The training set (pyperformance 1d3e2179, with the stdlib shim for pyperf).
declare -A TRAIN_SHA256=(
	[chaos]=80f280f668bca25221f047ddcc9e38f2c73998df19565435f8a8e4a104634508
	[deltablue]=2cf25ee13c2e70a96d4701d1d9370652dd57ac101f569fb3972d322a0719d195
	[deepcopy]=186817d936c4bb8cf37684b4717f052e955f3dc2f410d8cfb75253f0647e62c5
	[float]=518765a64e1a3063f140d991f6705bbc69b44b4158ed5aaf06610bafff01cb19
	[go]=0d57868935e68811782913a8f0af2e8a792cac6e48039ce881470d8413dee59a
	[json_dumps]=da814f751099125de4d7991bea6e97f7365466e59b1b25bbc639488213b31858
	[logging]=4c4c26763b274e2139144c13bc11d91362a9481a3345023e2f2db5041cfe4a68
	[pickle_pure_python]=a005d719cb1fbec1dbb90a48bfe3aff0e4a096ce0655cba2d3bdc371f5575d20
	[pidigits]=1e7d909fa08792fe0770693229b974c799789721d6f2731579587788579aeb04
	[regex_v8]=21bfde9008180b6b03be8506cba4ebcb20e7f7252daa28b64be11adb6eed70e7
	[richards]=156fedce2aa9906b7bd23895db48ef6762a76282669b4a8fa399b1bd873600d6
	[generators]=938a749455a47d1ae7edc0a32008e00fab291e79352d9f1f11e9486b6e842b7e
)
TRAIN=(chaos deltablue deepcopy float go json_dumps logging pickle_pure_python pidigits regex_v8 richards generators)
for b in "${TRAIN[@]}"; do
	f=$PYPERF_BENCH/bm_$b.py
	[ -f "$f" ] || { echo "make-profile.sh: missing $f: set PYPERF_BENCH to the pyperf benchmarks' directory" >&2; exit 2; }
	got=$(sha256sum "$f" | cut -d' ' -f1)
	[ "$got" = "${TRAIN_SHA256[$b]}" ] ||
		{ echo "make-profile.sh: $f: SHA-256 $got, expected ${TRAIN_SHA256[$b]}" >&2; exit 2; }
done
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
		LLVM_PROFILE_FILE="$B/train/raw/%m.profraw" setarch -R "$B/python" -I "$PYPERF_BENCH/bm_$b.py" quick >/dev/null)
done
"$LLVM/llvm-profdata" merge -o "$B/train/cpython.profdata" "$B"/train/raw/*.profraw
"$LLVM/llvm-profdata" merge --text -o "$B/train/cpython.proftext" "$B/train/cpython.profdata"
xz -9 -T1 -c "$B/train/cpython.proftext" >"$HERE/cpython.proftext.xz"
echo "make-profile.sh: wrote $HERE/cpython.proftext.xz; rebuild with build.sh and update the lock (WASMPY_UPDATE_LOCK=1)"
