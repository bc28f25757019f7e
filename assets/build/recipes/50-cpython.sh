# shellcheck shell=bash
# CPython 3.13 (Debian's python3.13 source package, only its upstream
# tarball: no Debian patches) with our patches/ applied: a native build
# Python of the same version, which runs the cross build's generators and
# mkstdlib.py, then the cross build for wasm32-wasip1 against the sysroot.
# After every recipe ran, build.sh calls link_reactor and build_stdlib (here)
# to write python.wasm and python313.zip.

input python3.13 source python3.13
recipe cpython

# Linear memory at start (CPython's own WASI default): the 8 MiB stack, 2.8 MiB
# of data and what Py_InitializeEx allocates fit in 12 MiB; 20 MiB leaves room
# for the first imports (json, re, ... take it to ~17 MiB) without growing. There is no maximum; the host limits memory.
readonly INITIAL_MEMORY=$((20 * 1024 * 1024))
readonly STACK_SIZE=8388608
# PyErr_SetInterruptEx lets the host raise KeyboardInterrupt in a run (Ctrl-C).
readonly EXPORTS=(_initialize Py_InitializeEx PyRun_SimpleString PyErr_SetInterruptEx malloc free)
readonly MODULE_C=$HERE/wasmpymodule.c
readonly MKSTDLIB=$HERE/mkstdlib.py
# Our changes to CPython's source, C and Lib/ alike, applied in name order
# (see patches/README.md).
mapfile -t PATCHES < <(find "$HERE/patches" -maxdepth 1 -name '*.patch' | LC_ALL=C sort)
readonly PATCHES

# patches_sha: one hash for the patch set, each patch's name and content in
# the order they apply.
patches_sha() {
	local p
	for p in "${PATCHES[@]}"; do
		basename "$p"
		sha256 "$p"
	done | sha256sum | cut -d' ' -f1
}
# Profile-guided optimisation: clang's front-end profile of a native build of
# this source (and patches) running pyperformance benchmarks (pgo/README.md
# says how it was taken, and pgo/make-profile.sh takes it again). It is kept in
# the repository because training counts vary a little from run to run, and
# the build must not.
readonly PGO_PROFILE=$HERE/pgo/cpython.proftext.xz
local_input wasmpymodule.c "$(sha256 "$MODULE_C")"
local_input pgo/cpython.proftext.xz "$(sha256 "$PGO_PROFILE")"
local_input mkstdlib.py "$(sha256 "$MKSTDLIB")"
local_input patches "$(patches_sha)"

# Only what the cross build and mkstdlib.py run: no tests, no modules that
# need extra libraries, modest optimization.
NATIVE_SKIP=(_bz2 _ctypes _ctypes_test _curses _curses_panel _dbm _decimal _gdbm _hashlib
	_lzma _sqlite3 _ssl _tkinter _uuid readline _codecs_cn _codecs_hk _codecs_iso2022
	_codecs_jp _codecs_kr _codecs_tw _multibytecodec)

cpython() {
	S=$SRC/python
	NATIVE=$WORK/native
	CROSS=$WORK/cross
	BUILD_PY=$NATIVE/python

	local k_src k_patches k_native k_cross m
	k_src=$(key "${IN_SHA[python3.13]}")
	if ! stamp_ok src "$k_src"; then
		stamp_clear native; stamp_clear cross-configure; stamp_clear patches
		step unpack-python unpack_python
		stamp_set src "$k_src"
	fi
	k_patches=$(key "$k_src" "$(patches_sha)")
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

	NATIVE_ARGS=(--without-ensurepip --disable-test-modules "OPT=-DNDEBUG -O1")
	for m in "${NATIVE_SKIP[@]}"; do NATIVE_ARGS+=("py_cv_module_$m=n/a"); done
	k_native=$(key "$k_src" "${NATIVE_ARGS[@]}")
	if ! stamp_ok native "$k_native"; then
		stamp_clear cross-configure
		step native-configure configure_native
		step native-make make_native
		stamp_set native "$k_native"
	fi

	PROFDATA=$WORK/pgo/cpython.profdata
	local k_pgo
	k_pgo=$(key "$(sha256 "$PGO_PROFILE")")
	if ! stamp_ok pgo "$k_pgo"; then
		step pgo-profile pgo_profile
		stamp_set pgo "$k_pgo"
	fi

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
	# -fprofile-instr-use: the profile steers inlining and block layout; the
	# few functions whose source differs between x86-64 and wasm32 (#if on the
	# platform) are compiled as without it, quietly.
	# -flto=thin: the objects are LLVM bitcode, compiled to wasm at the link
	# (link_reactor) with inlining across files; ThinLTO's back ends run in
	# parallel, so the build gets no slower, and its output is the same
	# whatever the number of jobs (BENCHMARKS.md, "ThinLTO").
	CROSS_ARGS=(--host=wasm32-wasip1 --with-build-python="$BUILD_PY" --prefix=/usr/local
		--disable-test-modules --with-ensurepip=no
		"OPT=-DNDEBUG -O2 -Wall -mbulk-memory -flto=thin -fprofile-instr-use=$PROFDATA -Wno-profile-instr-unprofiled -Wno-profile-instr-out-of-date"
		"CFLAGS=$PREFIX_MAP")
	k_cross=$(key "$SYSROOT_KEY" "$k_native" "$k_pgo" "${CROSS_ENV[@]}" "${CROSS_ARGS[@]}" relative-srcdir)
	# The module source lives in the source tree (makesetup looks there); copy it
	# only when it changed, so make rebuilds only then.
	cmp -s "$MODULE_C" "$S/Modules/wasmpymodule.c" || cp "$MODULE_C" "$S/Modules/wasmpymodule.c"
	if ! stamp_ok cross-configure "$k_cross"; then
		step cross-configure configure_cross
		stamp_set cross-configure "$k_cross"
	fi
	step cross-make make_cross
}

unpack_python() {
	rm -rf "$S" "$S.tmp"
	mkdir -p "$S.tmp"
	tar -xf "$DL/${IN_FILE[python3.13]}" -C "$S.tmp" --strip-components=1
	# The newest file in the release is its date. Taken before the file that
	# holds it exists: find ran beside the redirection that creates it and,
	# when it saw it, took the build's own time as the release's.
	local epoch
	epoch=$(find "$S.tmp" -type f -printf '%T@\n' | sort -n | tail -n 1 | cut -d. -f1)
	echo "$epoch" >"$S.tmp/.source-date-epoch"
	mv "$S.tmp" "$S"
}

# patch_python: take back the patches applied last time (kept in
# $S/.wasmpy-patches), newest first, and apply the current set strictly (no
# fuzz): only the files they touch change, so make rebuilds only those.
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
		patch -d "$S" -p1 --forward --fuzz=0 --no-backup-if-mismatch <"$p"
		cp "$p" "$S/.wasmpy-patches/"
	done
}

# pgo_profile: the kept profile, indexed for clang.
pgo_profile() {
	mkdir -p "$WORK/pgo"
	xz -dc "$PGO_PROFILE" >"$WORK/pgo/cpython.proftext"
	"$LLVM/llvm-profdata" merge -o "$PROFDATA" "$WORK/pgo/cpython.proftext"
	rm "$WORK/pgo/cpython.proftext"
}

configure_native() {
	rm -rf "$NATIVE" && mkdir -p "$NATIVE" && cd "$NATIVE"
	"$S/configure" -C "${NATIVE_ARGS[@]}"
}

make_native() {
	cd "$NATIVE"
	make -j"$JOBS" all
	./python -c 'import sys, zlib, zipfile; assert sys.version_info[:2] == (3, 13), sys.version'
}

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

# mkvar NAME: a variable of the cross build's Makefile.
mkvar() { make -s -C "$CROSS" --no-print-directory -f Makefile -f - "print-$1" <<<'print-%: ; @printf "%s\n" "$($*)"'; }

# link_reactor: $STAGE/python.wasm, libpython and its modules' libraries
# (plus LINK_FIRST before them and LINK_ARGS after) linked as a reactor, optimized, every custom section gone.
link_reactor() {
	cd "$CROSS"
	local exports=() e
	for e in "${EXPORTS[@]}"; do
		[ "$e" = _initialize ] || exports+=("-Wl,--export=$e")
	done
	# shellcheck disable=SC2046 # Makefile values are word lists
	$WCC -flto=thin -O2 -Wl,--thinlto-jobs="$JOBS" -mexec-model=reactor -z stack-size=$STACK_SIZE -Wl,--stack-first \
		-Wl,--initial-memory=$INITIAL_MEMORY "${exports[@]}" \
		-o "$STAGE/python.unstripped.wasm" \
		"${LINK_FIRST[@]}" "$(mkvar LIBRARY)" $(mkvar MODLIBS) "${LINK_ARGS[@]}" $(mkvar LIBS) $(mkvar SYSLIBS)
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

# build_stdlib: $STAGE/python313.zip from the patched Lib/, the build's
# _sysconfigdata and ZIP_ARGS.
build_stdlib() {
	local sysconfig
	sysconfig=$(ls "$CROSS"/build/lib.*/_sysconfigdata_*.py)
	[ -f "$sysconfig" ] || { echo "no _sysconfigdata in $CROSS/build"; return 1; }
	mkdir -p "$STAGE/gen"
	# Build paths in the recorded configuration are this machine's business.
	sed "s|$WORK|/wasmpy-build|g" "$sysconfig" >"$STAGE/gen/$(basename "$sysconfig")"
	"$BUILD_PY" -I "$MKSTDLIB" --lib "$S/Lib" --extra "$STAGE/gen/$(basename "$sysconfig")" \
		"${ZIP_ARGS[@]}" --out "$STAGE/python313.zip"
	rm -rf "$STAGE/gen"
}
