# shellcheck shell=bash
# Pillow 11.1.0, for the "sci" variant only: its C core (PIL._imaging, with
# zlib for PNG, and the small _imagingmath and _imagingmorph) compiled for
# wasm32-wasi against the cross CPython's headers and the sysroot's zlib, each
# module a static archive linked into python.wasm as a builtin with a dotted
# name (one builtin table with numpy's and pandas', see 70-numpy.sh); its
# Python files go into python313.zip.
#
# The source is Debian's (trixie's pillow 11.1.0), its upstream tarball,
# with Debian's security fixes to it (the patches pillow/debian-patches.txt
# names, taken from the Debian tarball of trixie's pillow 11.1.0-5+deb13u4,
# pinned as the input pillow-debian: decoders meet untrusted files) and ours
# (pillow/50-wasi.patch: PdfParser without mmap, Image.show() through
# wasmpy.show()).
#
# Left out, and why: JPEG, and FreeType (ImageFont.truetype; text draws with
# Pillow's built-in bitmap font), because libjpeg and FreeType recover from
# errors with setjmp/longjmp, which WASI has only through the exception-
# handling proposal: clang 19 emits its legacy form, wazero 1.12 runs only the
# new one (try_table), and binaryen 108 cannot translate. A libjpeg whose
# error_exit cannot unwind would trap on a corrupt file. Also left out: TIFF
# compression, WebP, JPEG 2000, LittleCMS, libimagequant (no source here or
# not worth it yet); Pillow's own Python decoders (GIF, BMP, ICO, PPM,
# uncompressed TIFF, ...) all work.

[ "$VARIANT" = sci ] || return 0

input pillow source pillow sci
input pillow-debian debian pillow sci
recipe pillow

readonly PILLOW_DIR=$HERE/pillow
mapfile -t PILLOW_PATCHES < <(find "$PILLOW_DIR" -maxdepth 1 -name '*.patch' | LC_ALL=C sort)
readonly PILLOW_PATCHES
BUILTIN_MODULES+=("$PILLOW_DIR/modules.txt")
local_input pillow/ "$(cat "$PILLOW_DIR"/* "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"
# Preloaded: the modules a chart or an image run needs first (PIL.Image
# alone costs a run ~125 ms to import; PNG and ImageDraw ~10 ms more).
MANIFEST_JQ+=' | .preload += ["PIL.Image", "PIL.PngImagePlugin", "PIL.ImageDraw"] | .packages += [{name: "pillow", version: "11.1.0"}]'
# The C files of each module, as Pillow's setup.py lists them (its
# _IMAGING and _LIB_IMAGING); the JPEG, JPEG 2000, TIFF and libimagequant
# codecs compile to nothing without their HAVE_ macros.
readonly PILLOW_IMAGING=(_imaging decode encode map display outline path)
readonly PILLOW_LIB_IMAGING=(Access AlphaComposite Resample Reduce Bands BcnDecode BitDecode Blend
	Chops ColorLUT Convert ConvertYCbCr Copy Crop Dib Draw Effects EpsEncode File Fill Filter
	FliDecode Geometry GetBBox GifDecode GifEncode HexDecode Histo JpegDecode JpegEncode Matrix
	ModeFilter Negative Offset Pack PackDecode Palette Paste Quant QuantOctree QuantHash QuantHeap
	PcdDecode PcxDecode PcxEncode Point RankFilter RawDecode RawEncode Storage SgiRleDecode
	SunRleDecode TgaRleDecode TgaRleEncode Unpack UnpackYCC UnsharpMask XbmDecode XbmEncode
	ZipDecode ZipEncode TiffDecode Jpeg2KDecode Jpeg2KEncode BoxBlur QuantPngQuant codec_fd)

# pillow: after CPython's cross build (its pyconfig.h and headers), compile
# Pillow's modules (again only when the source, its patches, the sysroot, the
# cross configuration, CPython's patches (its headers) or this recipe changed), then add their archives to
# the link and Pillow's Python files to the zip.
pillow() {
	PL=$WORK/pillow PLS=$SRC/pillow
	local k_src k_make
	k_src=$(key "${IN_SHA[pillow]}" "${IN_SHA[pillow-debian]}" "$(cat "$PILLOW_DIR/debian-patches.txt")" "$(for p in "${PILLOW_PATCHES[@]}"; do basename "$p"; sha256 "$p"; done)")
	if ! stamp_ok pillow-src "$k_src"; then
		stamp_clear pillow-make
		step pillow-unpack pillow_unpack
		stamp_set pillow-src "$k_src"
	fi
	k_make=$(key "$k_src" "$SYSROOT_KEY" "$(cat "$WORK/stamps/cross-configure")" "$(cat "$WORK/stamps/patches")" \
		"$WCC" "$PREFIX_MAP" "$(sha256 "${BASH_SOURCE[0]}")")
	if ! stamp_ok pillow-make "$k_make"; then
		step pillow-make pillow_make
		stamp_set pillow-make "$k_make"
	fi
	LINK_ARGS+=("$PL/lib/_imaging.a" "$PL/lib/_imagingmath.a" "$PL/lib/_imagingmorph.a")
	step pillow-tree pillow_tree
	ZIP_ARGS+=(--tree "$PL/tree")
}

pillow_unpack() {
	rm -rf "$PLS" "$PLS.tmp"
	mkdir -p "$PLS.tmp"
	# The sources and the test scripts Debian's fixes touch, not the test images.
	tar -xf "$DL/${IN_FILE[pillow]}" -C "$PLS.tmp" --strip-components=1 --wildcards '*/src/*' '*/Tests/*.py'
	local p deb=$WORK/pillow-debian
	rm -rf "$deb" && mkdir -p "$deb"
	tar -xf "$DL/${IN_FILE[pillow-debian]}" -C "$deb" debian/patches
	while read -r p; do
		case $p in '' | '#'*) continue ;; esac
		echo "applying Debian's $p"
		patch -d "$PLS.tmp" -p1 --fuzz=0 --no-backup-if-mismatch <"$deb/debian/patches/$p"
	done <"$PILLOW_DIR/debian-patches.txt"
	rm -rf "$deb"
	for p in "${PILLOW_PATCHES[@]}"; do
		echo "applying $(basename "$p")"
		patch -d "$PLS.tmp" -p1 --fuzz=0 --no-backup-if-mismatch <"$p"
	done
	mv "$PLS.tmp" "$PLS"
}

# pillow_make: each C file to an object ($JOBS at a time), each module's
# objects to a static archive in $PL/lib.
pillow_make() {
	local version f
	version=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$PLS/src/PIL/_version.py")
	[ -n "$version" ] || { echo "no __version__ in $PLS/src/PIL/_version.py"; return 1; }
	rm -rf "$PL/obj" "$PL/lib"
	mkdir -p "$PL/obj/_imaging" "$PL/obj/_imagingmath" "$PL/obj/_imagingmorph" "$PL/lib"
	{
		for f in "${PILLOW_IMAGING[@]}"; do echo "_imaging src/$f.c"; done
		for f in "${PILLOW_LIB_IMAGING[@]}"; do echo "_imaging src/libImaging/$f.c"; done
		echo "_imagingmath src/_imagingmath.c"
		echo "_imagingmorph src/_imagingmorph.c"
	} >"$PL/sources"
	export WCC PREFIX_MAP CROSS S PLS PL version
	# shellcheck disable=SC2016 # expanded by the inner shell
	xargs -P "$JOBS" -L 1 sh -c 'cd "$PLS" && $WCC -O2 -DNDEBUG -mbulk-memory "$PREFIX_MAP" -Werror=implicit-function-declaration \
		-DHAVE_LIBZ -DPILLOW_VERSION="\"$version\"" -I"$CROSS" -I"$S/Include" -Isrc/libImaging \
		-c "$1" -o "$PL/obj/$0/$(basename "$1" .c).o"' <"$PL/sources"
	for f in _imaging _imagingmath _imagingmorph; do
		(cd "$PL/obj/$f" && find . -name '*.o' | LC_ALL=C sort | xargs "$LLVM/llvm-ar" rcsD "$PL/lib/$f.a")
	done
}

# pillow_tree: Pillow's Python files for python313.zip under $PL/tree.
pillow_tree() {
	rm -rf "$PL/tree" && mkdir -p "$PL/tree/PIL"
	cp "$PLS"/src/PIL/*.py "$PL/tree/PIL/"
}
