# shellcheck shell=bash
# bzip2 (Debian's bzip2 source package, its upstream tarball): libbz2.a for
# CPython's _bz2, hence the bz2 module. Only the library's seven files are
# compiled (upstream's Makefile would also build and test the programs); a
# bzip2.pc is written for configure's pkg-config check.

input bzip2 source bzip2
sysroot_lib bzip2 build_bzip2

build_bzip2() {
	local version
	unpack_source bzip2 "$WORK/bzip2"
	cd "$WORK/bzip2"
	make -j"$JOBS" libbz2.a CC="$WCC" AR="$LLVM/llvm-ar" RANLIB="$LLVM/llvm-ranlib" \
		CFLAGS="-O2 -D_FILE_OFFSET_BITS=64 $PREFIX_MAP"
	install -m 644 bzlib.h "$SYSROOT/include/wasm32-wasi/"
	install -m 644 libbz2.a "$SYSROOT/lib/wasm32-wasi/"
	version=${IN_FILE[bzip2]#bzip2_}
	version=${version%.orig.tar.*}
	# shellcheck disable=SC2016 # ${prefix} and friends are pkg-config's
	printf 'prefix=/\nlibdir=${prefix}lib/wasm32-wasi\nincludedir=${prefix}include/wasm32-wasi\n\nName: bzip2\nDescription: bzip2 compression library\nVersion: %s\nLibs: -L${libdir} -lbz2\nCflags: -I${includedir}\n' \
		"$version" >"$SYSROOT/lib/pkgconfig/bzip2.pc"
}
