"""Write the guest's standard library as a deterministic zip laid out as an installed Lib/.

Run by build.sh with the native build Python (same version as the guest, so
the bytecode magic matches):

    python mkstdlib.py --lib SRC/Lib --extra FILE.py --tree DIR --out python313.zip

The zip holds what `make install` would put in /usr/local/lib/python3.13:
every module's source beside its bytecode in __pycache__ (an unchecked-hash
.pyc, never revalidated against the source, so importing reads no source),
and the packages' data files. The host mounts its contents read-only at that
directory, so __file__, sys._stdlib_dir, tracebacks, linecache and
inspect.getsource see the files a native install has (Lib/ as patched by
build.sh: patches/ holds our changes to Lib/ too). Entries are sorted,
carry one fixed date and fixed attributes, and are deflated at level 9, so
the same sources and the same zlib give the same bytes.
"""

import argparse
import importlib._bootstrap_external as bootstrap_external
import importlib.util
import os
import sys
import time
import zipfile

# Top-level entries of Lib/ left out: development tools, tests, GUI, packaging,
# and packages whose C half does not exist on WASI.
PRUNE_TOP = {
    "_pyrepl", "ctypes", "curses", "ensurepip", "idlelib", "lib2to3",
    "pydoc_data", "site-packages", "test", "tkinter", "turtle.py",
    "turtledemo",
}
# Kept from pruned packages: pydoc (and so help()) imports _pyrepl.pager.
KEEP = {"_pyrepl/__init__.py", "_pyrepl/pager.py"}
PRUNE_DIRS = {"__pycache__"}  # at any depth


def collect(lib, prune=True):
    """Yield (relative posix path, absolute path) of the files to ship."""
    for root, dirs, files in os.walk(lib):
        rel_root = os.path.relpath(root, lib)
        rel_root = "" if rel_root == "." else rel_root.replace(os.sep, "/") + "/"
        dirs[:] = sorted(d for d in dirs if d not in PRUNE_DIRS)
        for name in sorted(files):
            rel = rel_root + name
            if prune and rel.split("/", 1)[0] in PRUNE_TOP and rel not in KEEP:
                continue
            yield rel, os.path.join(root, name)


def pyc(source, co_filename):
    code = compile(source, co_filename, "exec", dont_inherit=True, optimize=0)
    return bootstrap_external._code_to_hash_pyc(
        code, importlib.util.source_hash(source), checked=False)


def cached(rel):
    """The __pycache__ path of a module's bytecode, as importlib names it."""
    head, _, name = rel.rpartition("/")
    prefix = head + "/" if head else ""
    return f"{prefix}__pycache__/{name[:-3]}.{sys.implementation.cache_tag}.pyc"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", required=True, help="the source tree's Lib/")
    ap.add_argument("--extra", action="append", default=[],
                    help="a generated top-level module to add (e.g. _sysconfigdata)")
    ap.add_argument("--tree", action="append", default=[],
                    help="a directory whose contents are added as top-level entries (the tzdata package, numpy)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--stdlib-dir", default="/usr/local/lib/python3.13",
                    help="where the guest sees these files (for co_filename)")
    ap.add_argument("--epoch", type=int,
                    default=int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")))
    args = ap.parse_args()

    if sys.flags.optimize:
        sys.exit("mkstdlib: run without -O")

    files = dict(collect(args.lib))
    for path in args.extra:
        files[os.path.basename(path)] = path
    for tree in args.tree:
        for rel, path in collect(tree, prune=False):
            if rel in files:
                sys.exit(f"mkstdlib: {tree}: {rel} is already in the standard library")
            files[rel] = path

    # Zip dates have no zone and start in 1980.
    date = time.gmtime(max(args.epoch, 315532800))[:6]
    entries = {}
    for rel in sorted(files):
        with open(files[rel], "rb") as f:
            data = f.read()
        entries[rel] = data
        if rel.endswith(".py"):
            entries[cached(rel)] = pyc(data, f"{args.stdlib_dir}/{rel}")

    tmp = args.out + ".tmp"
    with zipfile.ZipFile(tmp, "w") as zf:
        for name in sorted(entries):
            info = zipfile.ZipInfo(name, date_time=date)
            info.create_system = 3
            info.external_attr = 0o100644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, entries[name], compresslevel=9)
    os.replace(tmp, args.out)
    modules = sum(name.endswith(".py") for name in entries)
    print(f"mkstdlib: {modules} modules, {len(entries)} files, "
          f"{os.path.getsize(args.out)} bytes")


if __name__ == "__main__":
    main()
