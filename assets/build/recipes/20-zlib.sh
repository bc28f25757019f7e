# shellcheck shell=bash
# zlib (Debian's zlib source package, its upstream tarball): libz.a for
# CPython's zlib module (and so zipfile and the stdlib zip's own reading).

input zlib source zlib
sysroot_lib zlib build_zlib

build_zlib() {
	unpack_source zlib "$WORK/zlib"
	cd "$WORK/zlib"
	CC="$WCC" CFLAGS="-O2 $PREFIX_MAP" AR="$LLVM/llvm-ar" RANLIB="$LLVM/llvm-ranlib" CHOST=wasm32 \
		./configure --static --prefix=/ --libdir=/lib/wasm32-wasi --includedir=/include/wasm32-wasi
	make -j"$JOBS" libz.a AR="$LLVM/llvm-ar" ARFLAGS=rcD RANLIB="$LLVM/llvm-ranlib"
	install -m 644 zlib.h zconf.h "$SYSROOT/include/wasm32-wasi/"
	install -m 644 libz.a "$SYSROOT/lib/wasm32-wasi/"
	install -m 644 zlib.pc "$SYSROOT/lib/pkgconfig/"
}
