# shellcheck shell=bash
# pandas 2.2.3, for the "sci" variant only: built like numpy (recipes/
# 70-numpy.sh, whose tools, cross file and compiler wrapper it reuses) against
# the wasm32 numpy's headers; its extension modules become builtins with
# dotted names in python.wasm, its Python files and those of its pure-Python
# dependencies (python-dateutil, pytz, six: Debian's packages) go into
# python313.zip, and the engine imports pandas before its snapshot.
#
# The source is Debian's (trixie's pandas 2.2.3+dfsg: the upstream release,
# less a documentation page), its upstream tarball only.

[ "$VARIANT" = sci ] || return 0

input pandas source pandas sci
input python3-dateutil binary python3-dateutil sci
input python3-pytz binary python3-pytz sci
input python3-six binary python3-six sci
recipe pandas

readonly PANDAS_DIR=$HERE/pandas
# Our changes: pandas-2.2.3-wasi.patch to pandas' source (its version without
# git, numpy's headers from the cross file, static khash allocators, guards
# for ctypes and mmap), python3-dateutil-pytz-wasi.patch to the two packages
# (zone files from the interpreter's tzdata package).
readonly PANDAS_PATCH=$PANDAS_DIR/pandas-2.2.3-wasi.patch
readonly PANDAS_DEPS_PATCH=$PANDAS_DIR/python3-dateutil-pytz-wasi.patch
BUILTIN_MODULES+=("$PANDAS_DIR/modules.txt")
readonly PANDAS_MESON_OPTIONS=(--prefix=/usr/local -Dbuildtype=release -Db_ndebug=if-release)
local_input pandas/ "$(cat "$PANDAS_DIR"/* "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"
MANIFEST_JQ+=' | .preload += ["pandas"] | .packages += [{name: "pandas", version: "2.2.3"},
	{name: "python-dateutil", version: "2.9.0"}, {name: "pytz", version: "2025.2"}, {name: "six", version: "1.17.0"}]'

# pandas: after numpy (whose $NP, $NPB and tools it uses), build pandas, then
# add its archives to the link and its files, with its dependencies', to the zip.
pandas() {
	PD=$WORK/pandas PDS=$SRC/pandas
	PDB=$PD/build PD_STAGE=$PD/stage
	local k_src k_conf
	k_src=$(key "${IN_SHA[pandas]}" "$(sha256 "$PANDAS_PATCH")")
	if ! stamp_ok pandas-src "$k_src"; then
		stamp_clear pandas-configure
		step pandas-unpack pandas_unpack
		stamp_set pandas-src "$k_src"
	fi
	k_conf=$(key "$k_src" "$(cat "$WORK/stamps/numpy-configure")" "$(sha256 "${BASH_SOURCE[0]}")" "${PANDAS_MESON_OPTIONS[@]}")
	if ! stamp_ok pandas-configure "$k_conf"; then
		step pandas-configure pandas_configure
		stamp_set pandas-configure "$k_conf"
	fi
	step pandas-make pandas_make
	step pandas-link-inputs pandas_link_inputs
	mapfile -t -O "${#LINK_ARGS[@]}" LINK_ARGS < "$PD/link-args"
	step pandas-tree pandas_tree
	ZIP_ARGS+=(--tree "$PD/tree")
}

pandas_unpack() {
	rm -rf "$PDS" "$PDS.tmp"
	mkdir -p "$PDS.tmp"
	tar -xf "$DL/${IN_FILE[pandas]}" -C "$PDS.tmp" --strip-components=1
	patch -d "$PDS.tmp" -p1 --fuzz=0 --no-backup-if-mismatch <"$PANDAS_PATCH"
	mv "$PDS.tmp" "$PDS"
}

# pandas_configure: numpy's headers as an install of the wasm32 numpy has
# them (its generated ones among them: the whole install), then meson with numpy's cross
# file and one more that says where they are.
pandas_configure() {
	rm -rf "$PDB" "$PD/npdev" "$PD/cross.ini" "$PD/tools"
	mkdir -p "$PD"
	"$NP/tools/bin/npy" "$NPS/vendored-meson/meson/meson.py" install -C "$NPB" --destdir "$PD/npdev" \
		--no-rebuild
	local inc=$PD/npdev/usr/local/lib/python3.13/site-packages/numpy/_core/include
	[ -f "$inc/numpy/_numpyconfig.h" ] || { echo "no numpy headers in $inc"; return 1; }
	# Cython names each string constant after its text and sorts its table
	# of them by those names; the .pyx path a code object records is one, and
	# meson passes it absolute, under the work dir: the table's order, and so
	# python.wasm, would depend on where the work dir is. Run from the work
	# dir, with its path arguments absolute, Cython records "src/pandas/...";
	# its depfile then names the dependencies from the work dir, which ninja
	# wants named from the build dir (absolute) and its target as given.
	mkdir -p "$PD/tools"
	cat >"$PD/tools/cython" <<-EOF
		#!/bin/bash
		args=(); prev=; out=
		for a in "\$@"; do
			if [ "\$prev" = -o ]; then out=\$a; a=\$(realpath -m -- "\$a")
			elif [ "\${a#-}" = "\$a" ] && [ -e "\$a" ]; then a=\$(realpath -m -- "\$a"); fi
			args+=("\$a"); prev=\$a
		done
		(cd $WORK && $NP/tools/bin/cython "\${args[@]}") || exit
		[ -z "\$out" ] || [ ! -f "\$out.dep" ] ||
			sed -i -E "1s|^[^:]*:|\$out:|; 2,\\\$s|^  ([^/])|  $WORK/\\1|" "\$out.dep"
	EOF
	chmod +x "$PD/tools/cython"
	# (meson runs the cython on PATH, whatever the cross file says.)
	printf "[properties]\nnumpy_include = '%s'\nnumpy_pxd_dir = '%s'\n" \
		"$inc" "$PD/npdev/usr/local/lib/python3.13/site-packages" >"$PD/cross.ini"
	cd "$PDS"
	PATH=$PD/tools:$NP/tools/bin:$PATH "$NP/tools/bin/npy" "$NPS/vendored-meson/meson/meson.py" setup "$PDB" \
		--cross-file "$NP/cross/wasm32-wasi.ini" --cross-file "$PD/cross.ini" "${PANDAS_MESON_OPTIONS[@]}"
}

pandas_make() {
	cd "$PDB"
	PATH=$PD/tools:$NP/tools/bin:$PATH ninja -j"$JOBS"
	rm -rf "$PD_STAGE"
	# Every tag: pandas' install_subdir()s (compat, core, io...) have none.
	"$NP/tools/bin/npy" "$NPS/vendored-meson/meson/meson.py" install --destdir "$PD_STAGE" --no-rebuild
}

# pandas_link_inputs: $PD/link-args: every module's archive and the static
# libraries it names (numpy's recipe already links libc++ and the builtin
# table, which lists pandas' modules too).
pandas_link_inputs() {
	local name init a
	while read -r name init; do
		case $name in '' | '#'*) continue ;; esac
		a=$PDB/${name//.//}.cpython-313-wasm32-wasi.so
		[ -f "$a" ] || { echo "pandas module $name: no $a"; return 1; }
		echo "$a"
		cat "$a.libs"
	done <"$PANDAS_DIR/modules.txt" | awk 'NF && !seen[$0]++' >"$PD/link-args"
}

# pandas_tree: for python313.zip under $PD/tree: pandas' Python files but its
# tests; dateutil, pytz and six from their Debian packages, patched, and
# zone1970.tab (pytz's list of common zones) from the tzdata package.
pandas_tree() {
	local site=$PD_STAGE/usr/local/lib/python3.13/site-packages out=$PD/tree deb=$PD/debs f
	rm -rf "$out" "$deb" && mkdir -p "$out" "$deb"
	(cd "$site" && find pandas -name '*.py' ! -path 'pandas/tests/*' ! -name conftest.py | LC_ALL=C sort) |
		while read -r f; do
			mkdir -p "$out/$(dirname "$f")" && cp "$site/$f" "$out/$f"
		done
	for f in python3-dateutil python3-pytz python3-six; do
		dpkg-deb -x "$DL/${IN_FILE[$f]}" "$deb"
	done
	local dist=$deb/usr/lib/python3/dist-packages
	cp -r "$dist/dateutil" "$out/"
	cp "$dist/six.py" "$out/"
	# Debian's pytz also holds a stray copy of itself, zone files included, in pytz/pytz.
	mkdir -p "$out/pytz"
	cp "$dist"/pytz/*.py "$out/pytz/"
	patch -d "$out" -p1 --fuzz=0 --no-backup-if-mismatch <"$PANDAS_DEPS_PATCH"
	dpkg-deb --fsys-tarfile "$DL/${IN_FILE[tzdata]}" | tar -xO ./usr/share/zoneinfo/zone1970.tab >"$out/pytz/zone1970.tab"
	find "$out" -name '__pycache__' -prune -exec rm -rf {} +
}
