# shellcheck shell=bash
# numpy 2.2.4, for the "sci" variant only (build.sh --variant sci): numpy's C
# extension modules compiled for wasm32-wasi with its vendored meson and
# trixie's Cython, each turned into a static archive (wcc below) and linked
# into python.wasm as builtins with dotted names; its Python files go into
# python313.zip, and the engine imports numpy before its snapshot.
#
# The source is no Debian package (the mirror lists numpy's source package
# but does not serve its files): numpy-2.2.4.tar.xz, numpy's git tag with its
# submodules, comes from WASMPY_SOURCES; README.md says how to recreate it.

[ "$VARIANT" = sci ] || return 0

input numpy file numpy-2.2.4.tar.xz sci
input cython3 binary cython3 sci
recipe numpy

readonly NUMPY_DIR=$HERE/numpy
# Our changes to numpy's source, applied in name order: the port
# (numpy-2.2.4-wasi.patch), then the wasm SIMD kernels.
mapfile -t NUMPY_PATCHES < <(find "$NUMPY_DIR" -maxdepth 1 -name '*.patch' | LC_ALL=C sort)
readonly NUMPY_PATCHES
# numpy's extension modules: dotted module name and init function.
readonly NUMPY_MODULES=$NUMPY_DIR/modules.txt
# Every list of builtin extension modules the sci link has (a later recipe,
# pandas', adds its own): numpy_link_inputs makes one builtin table of them.
BUILTIN_MODULES=("$NUMPY_MODULES")
# libc++ for pocketfft and the sort/hash tables, ninja for meson.
TOOL_PACKAGES+=(libc++-19-dev-wasm32 libc++abi-19-dev-wasm32 ninja-build)
readonly NUMPY_MESON_OPTIONS=(--prefix=/usr/local -Dbuildtype=release -Db_ndebug=if-release
	-Ddisable-highway=true -Ddisable-svml=true -Ddisable-intel-sort=true -Ddisable-threading=true
	-Dcpu-baseline=none -Dcpu-dispatch=none -Dallow-noblas=true -Dblas=none -Dlapack=none)
local_input numpy/ "$(cat "$NUMPY_DIR"/* "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"
# What the manifest adds: numpy is preloaded, and meets requirements.
MANIFEST_JQ='.preload = ["numpy"] | .packages = [{name: "numpy", version: "2.2.4"}]'

# numpy: build numpy, then hand its link inputs and Python files to
# link_reactor and build_stdlib. Its stamps key on the tarball, the patch,
# the tools and flags, and the cross build it compiles against.
numpy() {
	NP=$WORK/numpy NPS=$SRC/numpy
	NPB=$NP/build NP_SYSROOT=$NP/sysroot NP_STAGE=$NP/stage
	local k_tools k_src k_conf
	k_tools=$(key "${IN_SHA[cython3]}" "$(cat "$WORK/stamps/cross-configure")" "$(sha256 "${BASH_SOURCE[0]}")" \
		"$(sha256 "$NUMPY_DIR/pyinfo.py")" "$SYSROOT_KEY")
	if ! stamp_ok numpy-tools "$k_tools"; then
		stamp_clear numpy-configure
		step numpy-tools numpy_tools
		stamp_set numpy-tools "$k_tools"
	fi
	k_src=$(key "${IN_SHA[numpy]}" "$(for p in "${NUMPY_PATCHES[@]}"; do basename "$p"; sha256 "$p"; done)")
	if ! stamp_ok numpy-src "$k_src"; then
		stamp_clear numpy-configure
		step numpy-unpack numpy_unpack
		stamp_set numpy-src "$k_src"
	fi
	k_conf=$(key "$k_tools" "$k_src" "${NUMPY_MESON_OPTIONS[@]}")
	if ! stamp_ok numpy-configure "$k_conf"; then
		step numpy-configure numpy_configure
		stamp_set numpy-configure "$k_conf"
	fi
	step numpy-make numpy_make
	step numpy-link-inputs numpy_link_inputs
	mapfile -t LINK_FIRST < "$NP/link/first"
	mapfile -t LINK_ARGS < "$NP/link/args"
	step numpy-tree numpy_tree
	ZIP_ARGS+=(--tree "$NP/tree")
}

# numpy_tools: Cython from its .deb, run by the native build Python (which
# is also meson's); wrappers that keep bytecode and this work dir's path out
# of the cache and the outputs; the cross file; the sysroot with libc++.
numpy_tools() {
	rm -rf "$NP/tools" "$NP/cross" "$NP/pyinc" "$NP_SYSROOT"
	mkdir -p "$NP/tools/bin" "$NP/cross" "$NP/pyinc/cross"
	dpkg-deb -x "$DL/${IN_FILE[cython3]}" "$NP/tools/cython3"
	cat >"$NP/tools/bin/npy" <<-EOF
		#!/bin/sh
		export PYTHONPYCACHEPREFIX=$NP/pycache
		export PYTHONPATH=$NP/tools/cython3/usr/lib/python3/dist-packages
		exec $BUILD_PY "\$@"
	EOF
	# Cython writes the .pyx path into its C output, and names the C
	# constant holding it after that path (__pyx_k_root_cache_...): constants
	# are emitted sorted by name, so a work dir elsewhere reordered them and
	# changed python.wasm. A path under the current (build) directory is
	# written relative to it, so the sources are handed to Cython through
	# wasmpy-src, a link in the build dir to the source tree; what path is
	# left (none that we know of) is mapped away after.
	cat >"$NP/tools/bin/cython" <<-EOF
		#!/bin/bash
		args=()
		for a in "\$@"; do
			case \$a in
			$NPS/*) [ -e wasmpy-src ] || ln -s "$NPS" wasmpy-src 2>/dev/null; args+=("wasmpy-src/\${a#$NPS/}") ;;
			*) args+=("\$a") ;;
			esac
		done
		$NP/tools/bin/npy -c "import sys; from Cython.Compiler.Main import setuptools_main; sys.exit(setuptools_main())" "\${args[@]}" || exit
		out=; prev=; for a in "\$@"; do [ "\$prev" = -o ] && out=\$a; prev=\$a; done
		[ -z "\$out" ] || sed -i "s|$WORK|/wasmpy-build|g" "\$out"
	EOF
	# meson asks the Python it is given about headers and suffixes: answer
	# for the wasm32 CPython (cross pyconfig.h, its Include/), not the native one.
	cat >"$NP/tools/bin/pyhost" <<-EOF
		#!/bin/sh
		case "\$*" in *python_info.py*) exec $NP/tools/bin/npy $NUMPY_DIR/pyinfo.py $NP/pyinc "\$@";; esac
		exec $NP/tools/bin/npy "\$@"
	EOF
	cat >"$NP/cross/wcc" <<-EOF
		#!/bin/bash
		# clang for wasm32-wasi; a -shared link (meson's extension_module)
		# becomes a static archive of its objects, with the static libraries
		# it names in OUT.libs, for the link of python.wasm.
		drv=$LLVM/clang; case \$(basename "\$0") in wcxx) drv=$LLVM/clang++ ;; esac
		for a in "\$@"; do [ "\$a" = -shared ] && shared=1; done
		if [ -n "\$shared" ]; then
			out=; objs=(); libs=(); prev=
			for a in "\$@"; do
				[ "\$prev" = -o ] && out=\$a
				case \$a in *.o) objs+=("\$a") ;; *.a) libs+=("\$(realpath "\$a")") ;; esac
				prev=\$a
			done
			rm -f "\$out"
			$LLVM/llvm-ar rcsD "\$out" "\${objs[@]}" || exit 1
			printf '%s\n' "\${libs[@]}" >"\$out.libs"
			exit 0
		fi
		# wasm-ld has no --start-group/--end-group, which meson adds.
		args=(); for a in "\$@"; do case \$a in -Wl,--start-group|-Wl,--end-group) ;; *) args+=("\$a") ;; esac; done
		exec \$drv --target=wasm32-wasi --sysroot=$NP_SYSROOT "\${args[@]}"
	EOF
	ln -s wcc "$NP/cross/wcxx"
	chmod +x "$NP/tools/bin/"* "$NP/cross/wcc"
	local flags="'-O2', '-DNDEBUG', '-mbulk-memory', '-D_WASI_EMULATED_SIGNAL', '-D_WASI_EMULATED_PROCESS_CLOCKS', '-D_WASI_EMULATED_GETPID', '-ffile-prefix-map=$WORK=/wasmpy-build'"
	local libs="'-lwasi-emulated-signal', '-lwasi-emulated-process-clocks', '-lwasi-emulated-getpid'"
	cat >"$NP/cross/wasm32-wasi.ini" <<-EOF
		[binaries]
		c = '$NP/cross/wcc'
		cpp = '$NP/cross/wcxx'
		ar = '$LLVM/llvm-ar'
		strip = '$LLVM/llvm-strip'
		python = '$NP/tools/bin/pyhost'
		cython = '$NP/tools/bin/cython'
		pkg-config = 'false'
		cmake = 'false'

		[host_machine]
		system = 'wasi'
		cpu_family = 'wasm32'
		cpu = 'wasm32'
		endian = 'little'

		[properties]
		needs_exe_wrapper = true
		longdouble_format = 'IEEE_QUAD_LE'

		[built-in options]
		c_args = [$flags]
		cpp_args = [$flags]
		c_link_args = [$libs]
		cpp_link_args = [$libs]
	EOF
	cp "$CROSS/pyconfig.h" "$NP/pyinc/cross/"
	cp -a "$S/Include" "$NP/pyinc/Include"
	cp -a "$SYSROOT" "$NP_SYSROOT"
	mkdir -p "$NP_SYSROOT/include/wasm32-wasi/c++"
	cp -a /usr/lib/llvm-19/include/wasm32-wasi/c++/v1 "$NP_SYSROOT/include/wasm32-wasi/c++/"
	cp /usr/lib/llvm-19/lib/wasm32-wasi/libc++.a /usr/lib/llvm-19/lib/wasm32-wasi/libc++abi.a "$NP_SYSROOT/lib/wasm32-wasi/"
}

numpy_unpack() {
	rm -rf "$NPS" "$NPS.tmp"
	mkdir -p "$NPS.tmp"
	tar -xf "$DL/${IN_FILE[numpy]}" -C "$NPS.tmp" --strip-components=1
	local p
	for p in "${NUMPY_PATCHES[@]}"; do
		patch -d "$NPS.tmp" -p1 --forward --no-backup-if-mismatch <"$p"
	done
	mv "$NPS.tmp" "$NPS"
}

numpy_configure() {
	rm -rf "$NPB"
	cd "$NPS"
	PATH=$NP/tools/bin:$PATH "$NP/tools/bin/npy" vendored-meson/meson/meson.py setup "$NPB" \
		--cross-file "$NP/cross/wasm32-wasi.ini" "${NUMPY_MESON_OPTIONS[@]}"
}

# numpy_make: every target (version.py and __config__.py come with them),
# then the Python files as meson would install them.
numpy_make() {
	cd "$NPB"
	PATH=$NP/tools/bin:$PATH ninja -j"$JOBS"
	rm -rf "$NP_STAGE"
	"$NP/tools/bin/npy" "$NPS/vendored-meson/meson/meson.py" install --destdir "$NP_STAGE" \
		--no-rebuild --tags runtime,python-runtime
	# The generated __config__.py records the build's tool paths.
	sed -i "s|$WORK|/wasmpy-build|g" "$NP_STAGE"/usr/local/lib/python3.13/site-packages/numpy/__config__.py
}

# numpy_link_inputs: what the link of python.wasm adds: in $NP/link/first
# the builtin table (before libpython, whose own config.o it replaces), in
# $NP/link/args the modules' archives, the static libraries they need, libc++.
numpy_link_inputs() {
	local name init rel a
	mkdir -p "$NP/link"
	"$BUILD_PY" -I "$NUMPY_DIR/mkconfig.py" "$CROSS/Modules/config.c" "${BUILTIN_MODULES[@]}" >"$NP/link/config.c"
	$WCC -O2 -DNDEBUG -std=c11 -DPy_BUILD_CORE "$PREFIX_MAP" -I"$CROSS" -I"$S/Include" -I"$S/Include/internal" \
		-c "$NP/link/config.c" -o "$NP/link/config.o"
	$WCC -O2 "$PREFIX_MAP" -c "$NUMPY_DIR/cxa_throw.c" -o "$NP/link/cxa_throw.o"
	printf '%s\n' "$NP/link/config.o" "$NP/link/cxa_throw.o" >"$NP/link/first"
	while read -r name init; do
		case $name in '' | '#'*) continue ;; esac
		rel=${name//.//}
		a=$NPB/$rel.cpython-313-wasm32-wasi.so
		[ -f "$a" ] || { echo "numpy module $name: no $a"; return 1; }
		echo "$a"
		cat "$a.libs"
	done <"$NUMPY_MODULES" | awk 'NF && !seen[$0]++' >"$NP/link/args"
	printf '%s\n' "-L$NP_SYSROOT/lib/wasm32-wasi" -lc++ -lc++abi -lc-printscan-long-double >>"$NP/link/args"
}

# numpy_tree: numpy's Python files for python313.zip under $NP/tree/numpy:
# no tests (but _natype.py, which np.testing imports), no f2py (no compiler
# in the sandbox), no PyInstaller hook, no type stubs or C headers.
numpy_tree() {
	local site=$NP_STAGE/usr/local/lib/python3.13/site-packages f out=$NP/tree
	rm -rf "$out" && mkdir -p "$out"
	(cd "$site" && find numpy -name '*.py' \
		! -path '*/tests/*' ! -path 'numpy/f2py/*' ! -path 'numpy/_pyinstaller/*' ! -name conftest.py | LC_ALL=C sort) |
		while read -r f; do
			mkdir -p "$out/$(dirname "$f")" && cp "$site/$f" "$out/$f"
		done
	mkdir -p "$out/numpy/_core/tests"
	cp "$NPS/numpy/_core/tests/_natype.py" "$out/numpy/_core/tests/"
}
