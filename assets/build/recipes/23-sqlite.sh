# shellcheck shell=bash
# SQLite (Debian's sqlite3 source package, its upstream tarball: the source
# tree, not the amalgamation): libsqlite3.a for CPython's _sqlite3, hence the
# sqlite3 module. The amalgamation sqlite3.c is generated natively (tclsh),
# then compiled for wasm32. SQLite's own WASI support omits WAL (no shared
# memory), loadable extensions and threads, and locks with dot-files.
# Enabled beyond the defaults: FTS4, FTS5, R*Tree and the SQL math
# functions, as in Debian's and python.org's builds.

input sqlite source sqlite3
TOOL_PACKAGES+=(tcl8.6)
sysroot_lib sqlite build_sqlite

build_sqlite() {
	local version
	unpack_source sqlite "$WORK/sqlite"
	mkdir -p "$WORK/sqlite/native"
	cd "$WORK/sqlite/native"
	../configure --disable-tcl --with-tcl=no
	make sqlite3.c
	# shellcheck disable=SC2086 # WCC is a command line
	$WCC -O2 "$PREFIX_MAP" -DSQLITE_ENABLE_FTS4 -DSQLITE_ENABLE_FTS5 -DSQLITE_ENABLE_RTREE \
		-DSQLITE_ENABLE_MATH_FUNCTIONS -c sqlite3.c -o sqlite3.o
	rm -f libsqlite3.a
	"$LLVM/llvm-ar" rcD libsqlite3.a sqlite3.o
	install -m 644 sqlite3.h sqlite3ext.h "$SYSROOT/include/wasm32-wasi/"
	install -m 644 libsqlite3.a "$SYSROOT/lib/wasm32-wasi/"
	version=$(cat ../VERSION)
	# shellcheck disable=SC2016 # ${prefix} and friends are pkg-config's
	printf 'prefix=/\nlibdir=${prefix}lib/wasm32-wasi\nincludedir=${prefix}include/wasm32-wasi\n\nName: SQLite\nDescription: SQL database engine\nVersion: %s\nLibs: -L${libdir} -lsqlite3\nCflags: -I${includedir}\n' \
		"$version" >"$SYSROOT/lib/pkgconfig/sqlite3.pc"
}
