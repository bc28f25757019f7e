# shellcheck shell=bash
# The sysroot every wasm32 compile uses: wasi-libc (the C library and its
# headers) from Debian's .deb (trixie's: bookworm's is too old for 3.13),
# and the C libraries CPython links, each built by its own recipe, which
# registers with `sysroot_lib NAME FUNCTION`: FUNCTION builds the input NAME
# with $WCC and installs headers, static library and .pc file into $SYSROOT
# (include/wasm32-wasi, lib/wasm32-wasi, lib/pkgconfig), where CPython's
# configure finds them through pkg-config.

input wasi-libc binary wasi-libc
recipe sysroot

SYSROOT_LIBS=()
declare -A SYSROOT_FN
sysroot_lib() { SYSROOT_LIBS+=("$1"); SYSROOT_FN[$1]=$2; }

unpack_wasi_libc() {
	rm -rf "$SYSROOT" "$WORK/wasi-libc"
	mkdir -p "$WORK/wasi-libc"
	dpkg-deb -x "$DL/${IN_FILE[wasi-libc]}" "$WORK/wasi-libc"
	mv "$WORK/wasi-libc/usr" "$SYSROOT"
	rm -rf "$WORK/wasi-libc"
	mkdir -p "$SYSROOT/lib/pkgconfig"
}

# sysroot: the sysroot afresh whenever wasi-libc or the set of libraries
# changes (nothing stale is left in it), each library rebuilt when its input
# or its recipe's function changes. SYSROOT_KEY is the hash of the result.
sysroot() {
	local k k_libc name
	k_libc=$(key "${IN_SHA[wasi-libc]}" "${SYSROOT_LIBS[@]}")
	if ! stamp_ok sysroot "$k_libc"; then
		rm -f "$WORK"/stamps/lib-*
		step wasi-libc unpack_wasi_libc
		stamp_set sysroot "$k_libc"
	fi
	SYSROOT_KEY=$k_libc
	for name in "${SYSROOT_LIBS[@]}"; do
		k=$(key "$k_libc" "${IN_SHA[$name]}" "$WCC" "$PREFIX_MAP" "$(declare -f "${SYSROOT_FN[$name]}")")
		if ! stamp_ok "lib-$name" "$k"; then
			step "$name" "${SYSROOT_FN[$name]}"
			stamp_set "lib-$name" "$k"
		fi
		SYSROOT_KEY=$(key "$SYSROOT_KEY" "$k")
	done
}

# unpack_source NAME DIR: the input's tarball, fresh, into DIR.
unpack_source() {
	rm -rf "$2" && mkdir -p "$2"
	tar -xf "$DL/${IN_FILE[$1]}" -C "$2" --strip-components=1
}
