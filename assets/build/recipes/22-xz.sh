# shellcheck shell=bash
# xz-utils (Debian's xz-utils source package, its upstream tarball): only
# liblzma, single-threaded (WASI has no threads), for CPython's _lzma, hence
# the lzma module.

input xz-utils source xz-utils
sysroot_lib xz-utils build_xz

build_xz() {
	unpack_source xz-utils "$WORK/xz"
	cd "$WORK/xz"
	CC="$WCC" AR="$LLVM/llvm-ar" RANLIB="$LLVM/llvm-ranlib" CFLAGS="-O2 $PREFIX_MAP" \
		./configure --host=wasm32-unknown-wasi --disable-shared --enable-static --disable-threads \
		--disable-xz --disable-xzdec --disable-lzmadec --disable-lzmainfo --disable-lzma-links \
		--disable-scripts --disable-doc --disable-nls --disable-sandbox \
		--prefix=/ --libdir=/lib/wasm32-wasi --includedir=/include/wasm32-wasi
	make -j"$JOBS" -C src/liblzma
	make -C src/liblzma install DESTDIR="$WORK/xz/out"
	cp -R "$WORK/xz/out/include/wasm32-wasi/." "$SYSROOT/include/wasm32-wasi/"
	install -m 644 "$WORK/xz/out/lib/wasm32-wasi/liblzma.a" "$SYSROOT/lib/wasm32-wasi/"
	install -m 644 "$WORK/xz/out/lib/wasm32-wasi/pkgconfig/liblzma.pc" "$SYSROOT/lib/pkgconfig/"
}
