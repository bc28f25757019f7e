#!/usr/bin/env bash
# shellcheck disable=SC2016 # jq programs and a make rule are single-quoted on purpose
# Build wasmpy's interpreter: CPython for WASI as a reactor python.wasm, plus
# its standard library as python313.zip, from the inputs pinned by
# interpreter.lock, one recipe per input in recipes/. See README.md beside
# this file.
#
#   assets/build/build.sh [--variant sci] OUTDIR
#
# The default variant is CPython and its standard library; "sci" adds numpy
# (recipes/70-numpy.sh). A recipe that belongs to one variant returns early
# for the others; its lock entries carry "variant".
#
# Exit codes: 0 built (or OUTDIR already verified), 1 build or verification
# failure (a wrong or missing input among them), 2 usage, 3 toolchain or
# package download unavailable (not root, apt failed, mirror unreachable):
# callers may fall back to another interpreter.
#
# Environment:
#   WASMPY_BUILD_DIR     work dir (default ${XDG_CACHE_HOME:-$HOME/.cache}/wasmpy/build)
#   WASMPY_BUILD_JOBS    parallel make jobs (default: nproc)
#   WASMPY_UPDATE_LOCK=1 take the newest packages and rewrite interpreter.lock
#                        (with --variant, only that variant's inputs and outputs)
#   WASMPY_DEBIAN_MIRROR the Debian mirror URI (default: read from this
#                        machine's apt sources)
#   WASMPY_DEBIAN_SUITE  the suite inputs come from (default: the lock's)
#   WASMPY_SOURCES       the directory holding inputs that are no Debian package
#                        (default: ../shared/sources beside the checkout, the
#                        main one for a git worktree, the one it was cloned
#                        from for a clone of a local checkout without one)
set -euo pipefail

readonly ME=build.sh
readonly PY_SERIES=3.13
readonly LLVM=/usr/lib/llvm-19/bin
TOOL_PACKAGES=(clang-19 lld-19 llvm-19 libclang-rt-19-dev-wasm32 binaryen
	gcc make libc6-dev zlib1g-dev jq xz-utils patch)

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
readonly HERE
readonly LOCK=$HERE/interpreter.lock
# shellcheck source=lib.sh
. "$HERE/lib.sh"

T0=$SECONDS

usage() {
	sed -n '3,30p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

VARIANT=default
if [ "${1:-}" = --variant ]; then
	case ${2:-} in default | sci) VARIANT=$2 ;; *) echo "build.sh: error: unknown variant '${2:-}' (default, sci)" >&2; exit 2 ;; esac
	shift 2
fi
readonly VARIANT
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

# ---------------------------------------------------------------- recipes

# A recipe (recipes/NN-name.sh, sourced in name order) declares its pinned
# inputs with `input`, the files of this checkout its outputs depend on with
# `local_input`, extra toolchain packages in TOOL_PACKAGES, and its build with
# `recipe FUNCTION`; build.sh fetches every input, runs the recipes' functions
# in order, then links python.wasm (adding LINK_ARGS) and writes
# python313.zip (adding ZIP_ARGS, arguments of mkstdlib.py).
RECIPES=()
LINK_FIRST=() # objects that go before libpython (a replacement config.o)
LINK_ARGS=()
ZIP_ARGS=()
MANIFEST_JQ=. # a jq filter a variant's recipe adds to the manifest
LOCAL_INPUTS=()
declare -A LOCAL_SHA
recipe() { RECIPES+=("$1"); }
# local_input NAME SHA: a file (or set) of this checkout that goes into the
# outputs, recorded in the manifest.
local_input() { LOCAL_INPUTS+=("$1"); LOCAL_SHA[$1]=$2; }
for r in "$HERE"/recipes/*.sh; do
	# shellcheck source=/dev/null
	. "$r"
done

# ---------------------------------------------------------------- fast path

# lock_variant_inputs: the lock's inputs of this variant (those with no
# "variant" are every variant's), sorted.
lock_variant_inputs() {
	jq -r --arg v "$VARIANT" '.inputs | to_entries[] | select((.value.variant // $v) == $v) | .key' "$LOCK" | LC_ALL=C sort
}

# outdir_verified: OUTDIR's files match its manifest, and the manifest was
# built from the lock's inputs and this checkout's local inputs.
outdir_verified() {
	local m=$OUTDIR/manifest.json f want name
	command -v jq >/dev/null && [ -f "$m" ] && [ -f "$LOCK" ] || return 1
	for f in python.wasm python313.zip; do
		want=$(jq -r --arg f "$f" '.outputs[$f] // empty' "$m") || return 1
		[ -n "$want" ] && [ -f "$OUTDIR/$f" ] && [ "$(sha256 "$OUTDIR/$f")" = "$want" ] || return 1
	done
	[ "$(jq -r '.variant // "default"' "$m")" = "$VARIANT" ] || return 1
	[ "$(lock_variant_inputs | paste -sd' ')" = "$(printf '%s\n' "${INPUTS[@]}" | LC_ALL=C sort | paste -sd' ')" ] || return 1
	for name in "${INPUTS[@]}"; do
		[ "$(jq -r --arg n "$name" '.inputs[$n].sha256' "$LOCK")" = \
			"$(jq -r --arg n "$name" '.inputs[$n].sha256 // empty' "$m")" ] || return 1
	done
	for name in "${LOCAL_INPUTS[@]}"; do
		[ "$(jq -r --arg n "$name" '.inputs[$n].sha256 // empty' "$m")" = "${LOCAL_SHA[$name]}" ] || return 1
	done
	[ "$(jq -r '.exports // [] | join(" ")' "$m")" = "${EXPORTS[*]}" ]
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
SUITE=${WASMPY_DEBIAN_SUITE:-$(lockq '.suite // empty')}
SUITE=${SUITE:-trixie}
readonly SUITE

start=$SECONDS
# Files from WASMPY_SOURCES first: a missing one stops the build before any download.
for name in "${INPUTS[@]}"; do [ "${IN_TYPE[$name]}" != file ] || fetch "$name"; done
for name in "${INPUTS[@]}"; do [ "${IN_TYPE[$name]}" = file ] || fetch "$name"; done
printf 'build.sh: %-22s%4ss\n' inputs $((SECONDS - start)) >&2

# ---------------------------------------------------------------- recipes

# Every tool the build runs sees one locale and zone (and, once the Python
# recipe set SOURCE_DATE_EPOCH, one clock).
export LC_ALL=C TZ=UTC PYTHONHASHSEED=0
unset PYTHONPATH PYTHONHOME PYTHONSTARTUP PYTHONUSERBASE PYTHONSAFEPATH MAKEFLAGS MFLAGS \
	CFLAGS CPPFLAGS LDFLAGS LIBS CC CXX CPP LD AR RANLIB PKG_CONFIG_PATH || true

# Paths of this work dir never reach the outputs.
PREFIX_MAP="-ffile-prefix-map=$WORK=/wasmpy-build"
SYSROOT=$WORK/sysroot
WCC="$LLVM/clang --target=wasm32-wasi --sysroot=$SYSROOT"
readonly PREFIX_MAP SYSROOT WCC

for r in "${RECIPES[@]}"; do "$r"; done

# ---------------------------------------------------------------- outputs

STAGE=$OUTDIR.tmp.$$
cleanup() { rm -rf "$STAGE"; }
trap cleanup EXIT
rm -rf "$STAGE" && mkdir -p "$STAGE"

step link-reactor link_reactor
step stdlib-zip build_stdlib

WASM_SHA=$(sha256 "$STAGE/python.wasm")
ZIP_SHA=$(sha256 "$STAGE/python313.zip")

# inputs_json: the manifest's inputs, pinned then local.
inputs_json() {
	local name
	{
		for name in "${INPUTS[@]}"; do
			jq -n --arg n "$name" --arg v "${IN_VER[$name]}" --arg s "${IN_SHA[$name]}" '{($n): {version: $v, sha256: $s}}'
		done
		for name in "${LOCAL_INPUTS[@]}"; do
			jq -n --arg n "$name" --arg s "${LOCAL_SHA[$name]}" '{($n): {version: "local", sha256: $s}}'
		done
	} | jq -s 'add'
}
jq -n --arg v "$PY_VERSION" --arg w "$WASM_SHA" --arg z "$ZIP_SHA" --arg ex "${EXPORTS[*]}" \
	--arg variant "$VARIANT" --argjson in "$(inputs_json)" '{
	python_version: $v,
	variant: $variant,
	exports: ($ex | split(" ")),
	outputs: {"python.wasm": $w, "python313.zip": $z},
	inputs: $in
} | '"$MANIFEST_JQ" >"$STAGE/manifest.json"

toolchain_json() {
	local p args=()
	for p in clang-19 lld-19 llvm-19 libclang-rt-19-dev-wasm32 binaryen zlib1g-dev; do
		args+=(--arg "$p" "$(dpkg-query -W -f='${Version}' "$p" 2>/dev/null || true)")
	done
	jq -n "${args[@]}" '$ARGS.named'
}

# Outputs that differ from the lock's are expected only with another
# toolchain, or another local input; say so, but keep them.
if [ "${WASMPY_UPDATE_LOCK:-}" != 1 ] && [ -z "$LOCK_STALE" ]; then
	want_w=$(lockq --arg v "$VARIANT" '(if $v == "default" then . else .variants[$v] end).outputs["python.wasm"] // empty')
	want_z=$(lockq --arg v "$VARIANT" '(if $v == "default" then . else .variants[$v] end).outputs["python313.zip"] // empty')
	if [ -z "$want_w" ] || [ -z "$want_z" ]; then
		notice "interpreter.lock records no outputs for the $VARIANT variant; run WASMPY_UPDATE_LOCK=1 $0 --variant $VARIANT OUTDIR to record them"
	elif [ "$want_w" != "$WASM_SHA" ] || [ "$want_z" != "$ZIP_SHA" ]; then
		notice "outputs differ from interpreter.lock's (toolchain $(toolchain_json | jq -c .) vs locked $(lockq -c '.toolchain'), or a local input (${LOCAL_INPUTS[*]}) or a recipe changed); if intended, rerun with WASMPY_UPDATE_LOCK=1"
	fi
fi

rm -rf "$OUTDIR"
mv "$STAGE" "$OUTDIR"
trap - EXIT

# lock_inputs_json NAMES...: each input's lock entry, keeping fields the
# build does not set (a file input's "from").
lock_inputs_json() {
	local name
	for name in "$@"; do
		lockq --arg n "$name" '.inputs[$n] // {}' | jq --arg n "$name" --arg p "${IN_PKG[$name]}" \
			--arg t "${IN_TYPE[$name]}" --arg v "${IN_VER[$name]}" --arg f "${IN_FILE[$name]}" \
			--arg s "${IN_SHA[$name]}" --arg var "${IN_VARIANT[$name]}" '{($n): ({package: $p, type: $t, version: $v, file: $f, sha256: $s}
				+ (. // {} | del(.package, .type, .version, .file, .sha256, .variant))
				+ (if $var == "" then {} else {variant: $var} end))}'
	done | jq -s 'add // {}'
}
if [ "${WASMPY_UPDATE_LOCK:-}" = 1 ] && [ "$VARIANT" != default ]; then
	# A variant rewrites its own inputs and its outputs under variants; the
	# inputs it shares and the default's outputs stay.
	own=()
	for name in "${INPUTS[@]}"; do [ -z "${IN_VARIANT[$name]}" ] || own+=("$name"); done
	jq --argjson in "$(lock_inputs_json "${own[@]}")" --arg var "$VARIANT" --arg w "$WASM_SHA" --arg z "$ZIP_SHA" \
		'.inputs += $in | .variants[$var].outputs = {"python.wasm": $w, "python313.zip": $z}' "$LOCK" >"$LOCK.tmp"
	mv "$LOCK.tmp" "$LOCK"
	say "wrote $LOCK"
elif [ "${WASMPY_UPDATE_LOCK:-}" = 1 ]; then
	jq -n --arg suite "$SUITE" --arg v "$PY_VERSION" --argjson tc "$(toolchain_json)" \
		--argjson in "$(lock_inputs_json "${INPUTS[@]}")" --arg w "$WASM_SHA" --arg z "$ZIP_SHA" '{
		comment: "Inputs of the recipes in assets/build/recipes/, checked by SHA-256 before use. Rewrite with WASMPY_UPDATE_LOCK=1 assets/build/build.sh OUTDIR.",
		suite: $suite,
		python_version: $v,
		inputs: $in,
		toolchain: $tc,
		outputs: {"python.wasm": $w, "python313.zip": $z}
	}' >"$LOCK.tmp"
	# Keep the other variants' inputs and outputs.
	if [ -f "$LOCK" ]; then
		jq -s '.[0] as $old | .[1] | .inputs += ($old.inputs | with_entries(select(.value.variant)))
			| if $old.variants then .variants = $old.variants else . end' "$LOCK" "$LOCK.tmp" >"$LOCK.tmp2"
		mv "$LOCK.tmp2" "$LOCK.tmp"
	fi
	mv "$LOCK.tmp" "$LOCK"
	say "wrote $LOCK"
elif [ -n "$LOCK_STALE" ]; then
	notice "built from inputs that are not the locked ones; run WASMPY_UPDATE_LOCK=1 $0 OUTDIR to update interpreter.lock"
fi

say "done in $((SECONDS - T0))s: Python $PY_VERSION, python.wasm $(stat -c %s "$OUTDIR/python.wasm") bytes, python313.zip $(stat -c %s "$OUTDIR/python313.zip") bytes"
