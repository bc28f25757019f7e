#!/usr/bin/env bash
# shellcheck disable=SC2016 # jq programs and a make rule are single-quoted on purpose
# Build wasmpy's interpreter: CPython for WASI as a reactor python.wasm, plus
# its standard library as python313.zip, from Debian packages pinned by
# interpreter.lock. See README.md beside this file.
#
#   assets/build/build.sh OUTDIR
#
# Exit codes: 0 built (or OUTDIR already verified), 1 build or verification
# failure, 2 usage, 3 toolchain or package download unavailable (not root,
# apt failed, mirror unreachable): callers may fall back to another
# interpreter.
#
# Environment:
#   WASMPY_BUILD_DIR     work dir (default ${XDG_CACHE_HOME:-$HOME/.cache}/wasmpy/build)
#   WASMPY_BUILD_JOBS    parallel make jobs (default: nproc)
#   WASMPY_UPDATE_LOCK=1 take the newest packages and rewrite interpreter.lock
#   WASMPY_DEBIAN_MIRROR the Debian mirror URI (default: read from this
#                        machine's apt sources)
#   WASMPY_DEBIAN_SUITE  the suite inputs come from (default: the lock's)
set -euo pipefail

readonly PY_SERIES=3.13
readonly PY_PACKAGE=python3.13
readonly LLVM=/usr/lib/llvm-19/bin
# Linear memory at start (CPython's own WASI default): the 8 MiB stack, 2.8 MiB
# of data and what Py_InitializeEx allocates fit in 12 MiB; 20 MiB leaves room
# for the first imports (json, re, ... take it to ~17 MiB) without growing. There is no maximum; the host limits memory.
readonly INITIAL_MEMORY=$((20 * 1024 * 1024))
readonly STACK_SIZE=8388608
# PyErr_SetInterruptEx lets the host raise KeyboardInterrupt in a run (Ctrl-C).
readonly EXPORTS=(_initialize Py_InitializeEx PyRun_SimpleString PyErr_SetInterruptEx malloc free)
readonly TOOL_PACKAGES=(clang-19 lld-19 llvm-19 libclang-rt-19-dev-wasm32 binaryen
	gcc make libc6-dev zlib1g-dev jq xz-utils patch)

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly HERE
readonly LOCK=$HERE/interpreter.lock
readonly MODULE_C=$HERE/wasmpymodule.c
readonly MKSTDLIB=$HERE/mkstdlib.py
# Patches to the standard library's Python sources, applied by mkstdlib.py.
readonly STDLIB_PATCHES=("$HERE"/stdlib-patches/*.patch)
# Our changes to CPython's C source, applied in name order (see patches/README.md).
readonly PATCH_DIR=$HERE/patches

T0=$SECONDS

say() { printf 'build.sh: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }
unavailable() { say "unavailable: $*"; exit 3; }
notice() { printf '\nbuild.sh: NOTICE: %s\n\n' "$*" >&2; }
sha256() { sha256sum "$1" | cut -d' ' -f1; }
# stdlib_sha: what python313.zip is made by besides Lib/ (the script and its
# patches), so that changing either rebuilds the zip, and only the zip.
stdlib_sha() { cat "$MKSTDLIB" "${STDLIB_PATCHES[@]}" | sha256sum | cut -d' ' -f1; }

# step NAME FUNCTION...: run FUNCTION with its output in $LOGS/NAME.log, print
# the step's name and time, and the log's tail on failure. set -e holds inside
# the subshell because its status is collected without a test.
step() {
	local name=$1 start=$SECONDS rc
	shift
	printf 'build.sh: %-22s' "$name" >&2
	set +e
	("$@") >"$LOGS/$name.log" 2>&1
	rc=$?
	set -e
	if [ "$rc" -ne 0 ]; then
		printf 'FAILED (%ss)\n' $((SECONDS - start)) >&2
		say "last lines of $LOGS/$name.log:"
		tail -n 40 "$LOGS/$name.log" >&2
		exit "$rc"
	fi
	printf '%4ss\n' $((SECONDS - start)) >&2
}

# stamp_ok NAME KEY / stamp_set NAME KEY: a step's completion marker, holding
# the key (hash of everything the step's result depends on).
stamp_ok() { [ -f "$WORK/stamps/$1" ] && [ "$(cat "$WORK/stamps/$1")" = "$2" ]; }
stamp_set() { mkdir -p "$WORK/stamps" && printf '%s\n' "$2" >"$WORK/stamps/$1"; }
stamp_clear() { rm -f "$WORK/stamps/$1"; }
key() { printf '%s\n' "$@" | sha256sum | cut -c1-32; }

usage() {
	sed -n '3,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

if [ $# -ne 1 ] || [ -z "$1" ]; then usage; fi
case $1 in -h | --help) usage ;; esac
mkdir -p "$(dirname "$1")"
OUTDIR=$(cd "$(dirname "$1")" && pwd)
OUTDIR=${OUTDIR%/}/$(basename "$1")
readonly OUTDIR
# OUTDIR is replaced whole at the end: refuse one that holds anything else.
if [ -d "$OUTDIR" ] && find "$OUTDIR" -mindepth 1 -maxdepth 1 \
	! -name python.wasm ! -name python313.zip ! -name manifest.json | grep -q .; then
	echo "build.sh: error: $OUTDIR holds files build.sh did not write; give an empty or new directory" >&2
	exit 2
fi

# ---------------------------------------------------------------- fast path

# patches_sha: one hash for the patch set, each patch's name and content in
# the order they apply.
patches_sha() {
	local p
	for p in $(find "$PATCH_DIR" -maxdepth 1 -name '*.patch' | LC_ALL=C sort); do
		basename "$p"
		sha256 "$p"
	done | sha256sum | cut -d' ' -f1
}

# outdir_verified: OUTDIR's files match its manifest, and the manifest was
# built from the lock's inputs and this checkout's module source.
outdir_verified() {
	local m=$OUTDIR/manifest.json f want name
	command -v jq >/dev/null && [ -f "$m" ] && [ -f "$LOCK" ] || return 1
	for f in python.wasm python313.zip; do
		want=$(jq -r --arg f "$f" '.outputs[$f] // empty' "$m") || return 1
		[ -n "$want" ] && [ -f "$OUTDIR/$f" ] && [ "$(sha256 "$OUTDIR/$f")" = "$want" ] || return 1
	done
	for name in $(jq -r '.inputs | keys[]' "$LOCK"); do
		[ "$(jq -r --arg n "$name" '.inputs[$n].sha256' "$LOCK")" = \
			"$(jq -r --arg n "$name" '.inputs[$n].sha256 // empty' "$m")" ] || return 1
	done
	[ "$(jq -r '.inputs["wasmpymodule.c"].sha256 // empty' "$m")" = "$(sha256 "$MODULE_C")" ] &&
		[ "$(jq -r '.exports // [] | join(" ")' "$m")" = "${EXPORTS[*]}" ] &&
		[ "$(jq -r '.inputs["mkstdlib.py"].sha256 // empty' "$m")" = "$(stdlib_sha)" ] &&
		[ "$(jq -r '.inputs.patches.sha256 // empty' "$m")" = "$(patches_sha)" ]
}

if [ "${WASMPY_UPDATE_LOCK:-}" != 1 ] && outdir_verified; then
	say "$OUTDIR is up to date"
	exit 0
fi

WORK=${WASMPY_BUILD_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/wasmpy/build}
JOBS=${WASMPY_BUILD_JOBS:-$(nproc 2>/dev/null || echo 2)}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
readonly WORK JOBS
readonly LOGS=$WORK/logs DL=$WORK/dl SRC=$WORK/src
mkdir -p "$LOGS" "$DL" "$SRC"

exec 9>"$WORK/.lock"
if ! flock -n 9; then
	say "waiting for another build in $WORK"
	flock 9
fi
# A build that held the lock may have just produced OUTDIR.
if [ "${WASMPY_UPDATE_LOCK:-}" != 1 ] && outdir_verified; then
	say "$OUTDIR is up to date"
	exit 0
fi
say "building into $OUTDIR (work dir $WORK, logs in $LOGS)"

# ---------------------------------------------------------------- toolchain

tools_installed() {
	local p
	for p in "${TOOL_PACKAGES[@]}"; do
		[ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)" = "ii " ] || return 1
	done
}

install_tools() {
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y --no-install-recommends "${TOOL_PACKAGES[@]}" && return 0
	apt-get update
	apt-get install -y --no-install-recommends "${TOOL_PACKAGES[@]}"
}

if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
	unavailable "needs a Debian system with apt"
fi
if ! tools_installed; then
	[ "$(id -u)" -eq 0 ] || unavailable "toolchain missing and not root: apt-get install ${TOOL_PACKAGES[*]}"
	printf 'build.sh: %-22s' toolchain >&2
	start=$SECONDS
	if ! install_tools >"$LOGS/toolchain.log" 2>&1; then
		printf 'FAILED\n' >&2
		tail -n 20 "$LOGS/toolchain.log" >&2
		unavailable "apt-get install failed (see $LOGS/toolchain.log)"
	fi
	printf '%4ss\n' $((SECONDS - start)) >&2
fi
for f in "$LLVM/clang" "$LLVM/wasm-ld" "$LLVM/llvm-ar" "$LLVM/llvm-ranlib" "$LLVM/llvm-strip" /usr/bin/wasm-opt; do
	[ -x "$f" ] || unavailable "missing $f"
done

# ---------------------------------------------------------------- inputs

[ -f "$LOCK" ] || [ "${WASMPY_UPDATE_LOCK:-}" = 1 ] ||
	die "missing $LOCK (create it with WASMPY_UPDATE_LOCK=1)"
lockq() { if [ -f "$LOCK" ]; then jq -r "$@" "$LOCK"; fi; }
SUITE=${WASMPY_DEBIAN_SUITE:-$(lockq '.suite // empty')}
SUITE=${SUITE:-trixie}
readonly SUITE

# debian_mirror: the first URI of this machine's own Debian archive entry.
debian_mirror() {
	local f suites='^(bullseye|bookworm|trixie|forky|duke|stable|oldstable|testing|unstable|sid)$'
	{
		for f in /etc/apt/sources.list.d/*.sources; do
			[ -r "$f" ] && { cat "$f"; echo; }
		done
	} | awk -v RS='' -F'\n' -v want="$suites" '
		{
			types = ""; uris = ""; st = ""
			for (i = 1; i <= NF; i++) {
				line = $i
				if (line ~ /^[ \t]*#/) continue
				k = tolower(line); v = line; sub(/^[^:]*:[ \t]*/, "", v)
				if (k ~ /^types:/) types = v
				if (k ~ /^uris:/) uris = v
				if (k ~ /^suites:/) st = v
			}
			if (types !~ /(^|[ \t])deb([ \t]|$)/) next
			n = split(st, s, /[ \t]+/)
			for (j = 1; j <= n; j++) if (s[j] ~ want) { split(uris, u, /[ \t]+/); print u[1]; exit }
		}'
	if [ -r /etc/apt/sources.list ]; then
		awk -v want="$suites" '$1 == "deb" {
			i = 2
			if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
			if ($(i + 1) ~ want) { print $i; exit }
		}' /etc/apt/sources.list
	fi
}

APT_READY=
APT=()
# apt_private: apt options for a private view of $SUITE that leaves the
# machine's own sources, lists, cache and preferences alone.
apt_private() {
	[ -z "$APT_READY" ] || return 0
	local mirror dir=$WORK/apt keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	mirror=${WASMPY_DEBIAN_MIRROR:-$(debian_mirror | head -n 1)}
	[ -n "$mirror" ] || unavailable "no Debian mirror in /etc/apt sources (set WASMPY_DEBIAN_MIRROR)"
	mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/parts" "$dir/prefs"
	{
		printf 'Types: deb deb-src\nURIs: %s\nSuites: %s\nComponents: main\n' "$mirror" "$SUITE"
		[ -f "$keyring" ] && printf 'Signed-By: %s\n' "$keyring"
	} >"$dir/private.sources"
	APT=(-o "Dir::Etc::SourceList=$dir/private.sources" -o "Dir::Etc::SourceParts=$dir/parts"
		-o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache"
		-o "Dir::Etc::Preferences=/dev/null" -o "Dir::Etc::PreferencesParts=$dir/prefs"
		-o "Acquire::Languages=none" -o "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false"
		-o "APT::Sandbox::User=$(id -un)" -o "APT::Get::Only-Source=true" -q)
	printf 'build.sh: %-22s' "apt update ($SUITE)" >&2
	local start=$SECONDS
	if ! apt-get "${APT[@]}" update >"$LOGS/apt-update.log" 2>&1 ||
		grep -Eq '^(E: |W: Failed to fetch|W: GPG error)' "$LOGS/apt-update.log"; then
		printf 'FAILED\n' >&2
		tail -n 20 "$LOGS/apt-update.log" >&2
		unavailable "apt-get update of $SUITE failed (see $LOGS/apt-update.log)"
	fi
	printf '%4ss\n' $((SECONDS - start)) >&2
	APT_READY=1
}

# newest VERSIONS...: the highest Debian version among the arguments.
newest() {
	local best='' v
	for v in "$@"; do
		if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$best"; then best=$v; fi
	done
	printf '%s\n' "$best"
}

available_versions() { # TYPE PACKAGE
	if [ "$1" = source ]; then
		apt-cache "${APT[@]}" showsrc "$2" 2>/dev/null | sed -n 's/^Version: //p'
	else
		apt-cache "${APT[@]}" madison "$2" 2>/dev/null | awk -F'|' '{gsub(/ /, "", $2); print $2}'
	fi
}

declare -A IN_VER IN_FILE IN_SHA
LOCK_STALE=

# fetch NAME TYPE PACKAGE: bring the input into $DL, checked against the lock,
# and record its version, file and hash.
fetch() {
	local name=$1 type=$2 pkg=$3 pver pfile psha ver file sha tmp vers
	pver=$(lockq --arg n "$name" '.inputs[$n].version // empty')
	pfile=$(lockq --arg n "$name" '.inputs[$n].file // empty')
	psha=$(lockq --arg n "$name" '.inputs[$n].sha256 // empty')
	if [ "${WASMPY_UPDATE_LOCK:-}" != 1 ] && [ -n "$psha" ] && [ -f "$DL/$pfile" ] &&
		[ "$(sha256 "$DL/$pfile")" = "$psha" ]; then
		IN_VER[$name]=$pver IN_FILE[$name]=$pfile IN_SHA[$name]=$psha
		return 0
	fi
	apt_private
	mapfile -t vers < <(available_versions "$type" "$pkg")
	[ "${#vers[@]}" -gt 0 ] || unavailable "$pkg is not in $SUITE on the mirror"
	if [ "${WASMPY_UPDATE_LOCK:-}" != 1 ] && [ -n "$pver" ] && printf '%s\n' "${vers[@]}" | grep -qxF -- "$pver"; then
		ver=$pver
	else
		ver=$(newest "${vers[@]}")
		if [ "${WASMPY_UPDATE_LOCK:-}" != 1 ]; then
			notice "$pkg ${pver:-(not pinned)} is no longer on the mirror; using the newest, $ver. Run WASMPY_UPDATE_LOCK=1 $0 OUTDIR to record it in the lock."
		fi
	fi
	tmp=$DL/tmp.$name
	rm -rf "$tmp" && mkdir -p "$tmp"
	if [ "$type" = source ]; then
		(cd "$tmp" && apt-get "${APT[@]}" source --download-only "$pkg=$ver") >"$LOGS/fetch-$name.log" 2>&1 ||
			{ tail -n 20 "$LOGS/fetch-$name.log" >&2; unavailable "apt-get source $pkg=$ver failed"; }
		file=$(find "$tmp" -maxdepth 1 -name '*.orig.tar.*' ! -name '*.asc' -printf '%f\n' | sort | head -n 1)
	else
		(cd "$tmp" && apt-get "${APT[@]}" download "$pkg=$ver") >"$LOGS/fetch-$name.log" 2>&1 ||
			{ tail -n 20 "$LOGS/fetch-$name.log" >&2; unavailable "apt-get download $pkg=$ver failed"; }
		file=$(find "$tmp" -maxdepth 1 -name '*.deb' -printf '%f\n' | sort | head -n 1)
	fi
	[ -n "$file" ] || die "no file for $pkg=$ver in $tmp"
	sha=$(sha256 "$tmp/$file")
	if [ "$ver" = "$pver" ] && [ "$file" = "$pfile" ] && [ "$sha" != "$psha" ]; then
		rm -rf "$tmp"
		die "SHA-256 of $file is $sha, the lock pins $psha: refusing to build"
	fi
	if [ "$file" != "$pfile" ] || [ "$sha" != "$psha" ]; then
		LOCK_STALE=1
		[ "${WASMPY_UPDATE_LOCK:-}" = 1 ] || notice "$name: $file ($sha) is not the locked input"
	elif [ "$ver" != "$pver" ]; then
		LOCK_STALE=1 # same upstream file under a new Debian revision
	fi
	mv -f "$tmp/$file" "$DL/$file"
	rm -rf "$tmp"
	IN_VER[$name]=$ver IN_FILE[$name]=$file IN_SHA[$name]=$sha
}

start=$SECONDS
fetch python3.13 source "$PY_PACKAGE"
fetch wasi-libc binary wasi-libc
fetch zlib source zlib
printf 'build.sh: %-22s%4ss\n' inputs $((SECONDS - start)) >&2
MODULE_SHA=$(sha256 "$MODULE_C")
STDLIB_SHA=$(stdlib_sha)
mapfile -t PATCHES < <(find "$PATCH_DIR" -maxdepth 1 -name '*.patch' | LC_ALL=C sort)
PATCHES_SHA=$(patches_sha)

# ---------------------------------------------------------------- sources

# Every tool the build runs sees one clock, the tarball's, and one locale.
export LC_ALL=C TZ=UTC PYTHONHASHSEED=0
unset PYTHONPATH PYTHONHOME PYTHONSTARTUP PYTHONUSERBASE PYTHONSAFEPATH MAKEFLAGS MFLAGS \
	CFLAGS CPPFLAGS LDFLAGS LIBS CC CXX CPP LD AR RANLIB PKG_CONFIG_PATH || true

S=$SRC/python
SYSROOT=$WORK/sysroot
NATIVE=$WORK/native
CROSS=$WORK/cross
readonly S SYSROOT NATIVE CROSS

k_src=$(key "${IN_SHA[python3.13]}")
unpack_python() {
	rm -rf "$S" "$S.tmp"
	mkdir -p "$S.tmp"
	tar -xf "$DL/${IN_FILE[python3.13]}" -C "$S.tmp" --strip-components=1
	# The newest file in the release is its date.
	find "$S.tmp" -type f -printf '%T@\n' | sort -n | tail -n 1 | cut -d. -f1 >"$S.tmp/.source-date-epoch"
	mv "$S.tmp" "$S"
}
if ! stamp_ok src "$k_src"; then
	stamp_clear native; stamp_clear cross-configure; stamp_clear patches
	step unpack-python unpack_python
	stamp_set src "$k_src"
fi

# patch_python: take back the patches applied last time (kept in
# $S/.wasmpy-patches), newest first, and apply the current set: only the
# files they touch change, so make rebuilds only those.
patch_python() {
	local p
	if [ -d "$S/.wasmpy-patches" ]; then
		for p in $(find "$S/.wasmpy-patches" -name '*.patch' | LC_ALL=C sort -r); do
			patch -d "$S" -p1 -R --no-backup-if-mismatch -s <"$p"
		done
		rm -rf "$S/.wasmpy-patches"
	fi
	mkdir -p "$S/.wasmpy-patches"
	for p in "${PATCHES[@]}"; do
		echo "applying $(basename "$p")"
		patch -d "$S" -p1 --forward --no-backup-if-mismatch <"$p"
		cp "$p" "$S/.wasmpy-patches/"
	done
}
k_patches=$(key "$k_src" "$PATCHES_SHA")
if ! stamp_ok patches "$k_patches"; then
	stamp_clear src # a patch that fails halfway leaves a tree only unpacking mends
	step patch-python patch_python
	stamp_set src "$k_src"
	stamp_set patches "$k_patches"
fi
SOURCE_DATE_EPOCH=$(cat "$S/.source-date-epoch")
export SOURCE_DATE_EPOCH
PY_VERSION=$(sed -n 's/^#define PY_VERSION[[:space:]]*"\(.*\)"/\1/p' "$S/Include/patchlevel.h")
case $PY_VERSION in "$PY_SERIES".*) ;; *) die "unexpected Python version $PY_VERSION" ;; esac

# Paths of this work dir never reach the outputs.
PREFIX_MAP="-ffile-prefix-map=$WORK=/wasmpy-build"
WCC="$LLVM/clang --target=wasm32-wasi --sysroot=$SYSROOT"

# ---------------------------------------------------------------- sysroot + zlib

k_sysroot=$(key "${IN_SHA[wasi-libc]}" "${IN_SHA[zlib]}" "$WCC" "$PREFIX_MAP" v1)
build_sysroot() {
	rm -rf "$SYSROOT" "$WORK/wasi-libc" "$WORK/zlib"
	mkdir -p "$WORK/wasi-libc" "$WORK/zlib"
	dpkg-deb -x "$DL/${IN_FILE[wasi-libc]}" "$WORK/wasi-libc"
	mv "$WORK/wasi-libc/usr" "$SYSROOT"
	rm -rf "$WORK/wasi-libc"
	tar -xf "$DL/${IN_FILE[zlib]}" -C "$WORK/zlib" --strip-components=1
	cd "$WORK/zlib"
	CC="$WCC" CFLAGS="-O2 $PREFIX_MAP" AR="$LLVM/llvm-ar" RANLIB="$LLVM/llvm-ranlib" CHOST=wasm32 \
		./configure --static --prefix=/ --libdir=/lib/wasm32-wasi --includedir=/include/wasm32-wasi
	make -j"$JOBS" libz.a AR="$LLVM/llvm-ar" ARFLAGS=rcD RANLIB="$LLVM/llvm-ranlib"
	install -m 644 zlib.h zconf.h "$SYSROOT/include/wasm32-wasi/"
	install -m 644 libz.a "$SYSROOT/lib/wasm32-wasi/"
	mkdir -p "$SYSROOT/lib/pkgconfig"
	install -m 644 zlib.pc "$SYSROOT/lib/pkgconfig/"
}
if ! stamp_ok sysroot "$k_sysroot"; then
	stamp_clear cross-configure
	step sysroot+zlib build_sysroot
	stamp_set sysroot "$k_sysroot"
fi

# ---------------------------------------------------------------- native build Python

# Only what the cross build and mkstdlib.py run: no tests, no modules that
# need extra libraries, modest optimization.
NATIVE_SKIP=(_bz2 _ctypes _ctypes_test _curses _curses_panel _dbm _decimal _gdbm _hashlib
	_lzma _sqlite3 _ssl _tkinter _uuid readline _codecs_cn _codecs_hk _codecs_iso2022
	_codecs_jp _codecs_kr _codecs_tw _multibytecodec)
NATIVE_ARGS=(--without-ensurepip --disable-test-modules "OPT=-DNDEBUG -O1")
for m in "${NATIVE_SKIP[@]}"; do NATIVE_ARGS+=("py_cv_module_$m=n/a"); done
k_native=$(key "$k_src" "${NATIVE_ARGS[@]}")
configure_native() {
	rm -rf "$NATIVE" && mkdir -p "$NATIVE" && cd "$NATIVE"
	"$S/configure" -C "${NATIVE_ARGS[@]}"
}
make_native() {
	cd "$NATIVE"
	make -j"$JOBS" all
	./python -c 'import sys, zlib, zipfile; assert sys.version_info[:2] == (3, 13), sys.version'
}
if ! stamp_ok native "$k_native"; then
	stamp_clear cross-configure
	step native-configure configure_native
	step native-make make_native
	stamp_set native "$k_native"
fi
BUILD_PY=$NATIVE/python

# ---------------------------------------------------------------- cross build

CROSS_ENV=(
	"CONFIG_SITE=$S/Tools/wasm/config.site-wasm32-wasi"
	"CC=$WCC" "CPP=$WCC -E" "LDSHARED=$LLVM/wasm-ld" "AR=$LLVM/llvm-ar" "RANLIB=$LLVM/llvm-ranlib"
	"PKG_CONFIG_LIBDIR=$SYSROOT/lib/pkgconfig" "PKG_CONFIG_SYSROOT_DIR=$SYSROOT" "PKG_CONFIG_PATH="
	# Relative sleeps: wazero rejects poll_oneoff on absolute clocks.
	ac_cv_func_clock_nanosleep=no ac_cv_lib_rt_clock_nanosleep=no
)
# -mbulk-memory: memcpy/memset of unknown size become memory.copy/fill, which
# wazero runs as one native memmove, instead of calls to wasi-libc's byte
# loops (the module already needed the feature: wasi-libc uses it).
CROSS_ARGS=(--host=wasm32-wasip1 --with-build-python="$BUILD_PY" --prefix=/usr/local
	--disable-test-modules --with-ensurepip=no
	"OPT=-DNDEBUG -O2 -Wall -mbulk-memory" "CFLAGS=$PREFIX_MAP")
k_cross=$(key "$k_sysroot" "$k_native" "${CROSS_ENV[@]}" "${CROSS_ARGS[@]}" relative-srcdir)
configure_cross() {
	rm -rf "$CROSS" && mkdir -p "$CROSS/Modules" && cd "$CROSS"
	printf '*static*\n_wasmpy wasmpymodule.c\n' >Modules/Setup.local
	# A relative source dir keeps this work dir's path out of python.wasm
	# (getpath.c is compiled with -DVPATH=srcdir).
	env "${CROSS_ENV[@]}" ../src/python/configure -C --build="$("$S/config.guess")" "${CROSS_ARGS[@]}"
}
make_cross() {
	cd "$CROSS"
	env "${CROSS_ENV[@]}" make -j"$JOBS" all
}
# The module source lives in the source tree (makesetup looks there); copy it
# only when it changed, so make rebuilds only then.
cmp -s "$MODULE_C" "$S/Modules/wasmpymodule.c" || cp "$MODULE_C" "$S/Modules/wasmpymodule.c"
if ! stamp_ok cross-configure "$k_cross"; then
	step cross-configure configure_cross
	stamp_set cross-configure "$k_cross"
fi
step cross-make make_cross

# ---------------------------------------------------------------- outputs

STAGE=$OUTDIR.tmp.$$
cleanup() { rm -rf "$STAGE"; }
trap cleanup EXIT
rm -rf "$STAGE" && mkdir -p "$STAGE"

# mkvar NAME: a variable of the cross build's Makefile.
mkvar() { make -s -C "$CROSS" --no-print-directory -f Makefile -f - "print-$1" <<<'print-%: ; @printf "%s\n" "$($*)"'; }

link_reactor() {
	cd "$CROSS"
	local exports=() e
	for e in "${EXPORTS[@]}"; do
		[ "$e" = _initialize ] || exports+=("-Wl,--export=$e")
	done
	# shellcheck disable=SC2046 # Makefile values are word lists
	$WCC -mexec-model=reactor -z stack-size=$STACK_SIZE -Wl,--stack-first \
		-Wl,--initial-memory=$INITIAL_MEMORY "${exports[@]}" \
		-o "$STAGE/python.unstripped.wasm" \
		"$(mkvar LIBRARY)" $(mkvar MODLIBS) $(mkvar LIBS) $(mkvar SYSLIBS)
	# binaryen's optimizer over the whole linked module, with the features
	# clang recorded in target_features; its output is deterministic.
	wasm-opt -O3 -o "$STAGE/python.opt.wasm" "$STAGE/python.unstripped.wasm"
	"$LLVM/llvm-strip" --strip-all -o "$STAGE/python.wasm" "$STAGE/python.opt.wasm"
	rm -f "$STAGE/python.unstripped.wasm" "$STAGE/python.opt.wasm"
	# llvm-strip keeps target_features (and producers): drop every custom
	# section, whose names, unlike the standard ones, are not upper case.
	local sec
	for sec in $("$LLVM/llvm-objdump" -h "$STAGE/python.wasm" | awk '$1 ~ /^[0-9]+$/ && $2 !~ /^[A-Z]+$/ {print $2}'); do
		"$LLVM/llvm-objcopy" --remove-section="$sec" "$STAGE/python.wasm"
	done
	if "$LLVM/llvm-objdump" -h "$STAGE/python.wasm" | awk '$1 ~ /^[0-9]+$/ && $2 !~ /^[A-Z]+$/ {bad = 1} END {exit !bad}'; then
		echo "custom sections left in python.wasm"
		return 1
	fi
}
step link-reactor link_reactor

build_stdlib() {
	local sysconfig
	sysconfig=$(ls "$CROSS"/build/lib.*/_sysconfigdata_*.py)
	[ -f "$sysconfig" ] || { echo "no _sysconfigdata in $CROSS/build"; return 1; }
	mkdir -p "$STAGE/gen"
	# Build paths in the recorded configuration are this machine's business.
	sed "s|$WORK|/wasmpy-build|g" "$sysconfig" >"$STAGE/gen/$(basename "$sysconfig")"
	local patches=() p
	for p in "${STDLIB_PATCHES[@]}"; do patches+=(--patch "$p"); done
	"$BUILD_PY" -I "$MKSTDLIB" --lib "$S/Lib" --extra "$STAGE/gen/$(basename "$sysconfig")" \
		"${patches[@]}" --out "$STAGE/python313.zip"
	rm -rf "$STAGE/gen"
}
step stdlib-zip build_stdlib

WASM_SHA=$(sha256 "$STAGE/python.wasm")
ZIP_SHA=$(sha256 "$STAGE/python313.zip")
jq -n --arg v "$PY_VERSION" --arg w "$WASM_SHA" --arg z "$ZIP_SHA" \
	--arg pv "${IN_VER[python3.13]}" --arg ps "${IN_SHA[python3.13]}" \
	--arg lv "${IN_VER[wasi-libc]}" --arg ls "${IN_SHA[wasi-libc]}" \
	--arg zv "${IN_VER[zlib]}" --arg zs "${IN_SHA[zlib]}" --arg ms "$MODULE_SHA" \
	--arg ex "${EXPORTS[*]}" --arg ss "$STDLIB_SHA" --arg pa "$PATCHES_SHA" '{
	python_version: $v,
	exports: ($ex | split(" ")),
	outputs: {"python.wasm": $w, "python313.zip": $z},
	inputs: {
		"python3.13": {version: $pv, sha256: $ps},
		"wasi-libc": {version: $lv, sha256: $ls},
		"zlib": {version: $zv, sha256: $zs},
		"wasmpymodule.c": {version: "local", sha256: $ms},
		"mkstdlib.py": {version: "local (with stdlib-patches/)", sha256: $ss},
		"patches": {version: "local", sha256: $pa}
	}
}' >"$STAGE/manifest.json"

toolchain_json() {
	local p args=()
	for p in clang-19 lld-19 llvm-19 libclang-rt-19-dev-wasm32 binaryen zlib1g-dev; do
		args+=(--arg "$p" "$(dpkg-query -W -f='${Version}' "$p" 2>/dev/null || true)")
	done
	jq -n "${args[@]}" '$ARGS.named'
}

# Outputs that differ from the lock's are expected only with another
# toolchain, or another module source; say so, but keep them.
if [ "${WASMPY_UPDATE_LOCK:-}" != 1 ] && [ -z "$LOCK_STALE" ]; then
	want_w=$(lockq '.outputs["python.wasm"] // empty')
	want_z=$(lockq '.outputs["python313.zip"] // empty')
	if [ "$want_w" != "$WASM_SHA" ] || [ "$want_z" != "$ZIP_SHA" ]; then
		notice "outputs differ from interpreter.lock's (toolchain $(toolchain_json | jq -c .) vs locked $(lockq -c '.toolchain'), or wasmpymodule.c, mkstdlib.py, stdlib-patches/ or build.sh changed); if intended, rerun with WASMPY_UPDATE_LOCK=1"
	fi
fi

rm -rf "$OUTDIR"
mv "$STAGE" "$OUTDIR"
trap - EXIT

if [ "${WASMPY_UPDATE_LOCK:-}" = 1 ]; then
	jq -n --arg suite "$SUITE" --arg v "$PY_VERSION" --argjson tc "$(toolchain_json)" \
		--arg pv "${IN_VER[python3.13]}" --arg pf "${IN_FILE[python3.13]}" --arg ps "${IN_SHA[python3.13]}" \
		--arg lv "${IN_VER[wasi-libc]}" --arg lf "${IN_FILE[wasi-libc]}" --arg ls "${IN_SHA[wasi-libc]}" \
		--arg zv "${IN_VER[zlib]}" --arg zf "${IN_FILE[zlib]}" --arg zs "${IN_SHA[zlib]}" \
		--arg w "$WASM_SHA" --arg z "$ZIP_SHA" '{
		comment: "Inputs of assets/build/build.sh, checked by SHA-256 before use. Rewrite with WASMPY_UPDATE_LOCK=1 assets/build/build.sh OUTDIR.",
		suite: $suite,
		python_version: $v,
		inputs: {
			"python3.13": {package: "python3.13", type: "source", version: $pv, file: $pf, sha256: $ps},
			"wasi-libc": {package: "wasi-libc", type: "binary", version: $lv, file: $lf, sha256: $ls},
			"zlib": {package: "zlib", type: "source", version: $zv, file: $zf, sha256: $zs}
		},
		toolchain: $tc,
		outputs: {"python.wasm": $w, "python313.zip": $z}
	}' >"$LOCK.tmp"
	mv "$LOCK.tmp" "$LOCK"
	say "wrote $LOCK"
elif [ -n "$LOCK_STALE" ]; then
	notice "built from inputs that are not the locked ones; run WASMPY_UPDATE_LOCK=1 $0 OUTDIR to update interpreter.lock"
fi

say "done in $((SECONDS - T0))s: Python $PY_VERSION, python.wasm $(stat -c %s "$OUTDIR/python.wasm") bytes, python313.zip $(stat -c %s "$OUTDIR/python313.zip") bytes"
