"""Write the guest's standard library as a deterministic zip laid out as an installed Lib/.

Run by build.sh with the native build Python (same version as the guest, so
the bytecode magic matches):

    python mkstdlib.py --lib SRC/Lib --extra FILE.py --patch FILE.patch ... --out python313.zip

The zip holds what `make install` would put in /usr/local/lib/python3.13:
every module's source beside its bytecode in __pycache__ (an unchecked-hash
.pyc, never revalidated against the source, so importing reads no source),
and the packages' data files. The host mounts its contents read-only at that
directory, so __file__, sys._stdlib_dir, tracebacks, linecache and
inspect.getsource see the files a native install has. Sources are patched
first by the --patch files (unified diffs against Lib/, applied strictly: a
hunk whose context does not match fails the build). Entries are sorted,
carry one fixed date and fixed attributes, and are deflated at level 9, so
the same sources and the same zlib give the same bytes.
"""

import argparse
import importlib._bootstrap_external as bootstrap_external
import importlib.util
import os
import re
import sys
import time
import zipfile

# Top-level entries of Lib/ left out: development tools, tests, GUI, packaging,
# and packages whose C half does not exist on WASI.
PRUNE_TOP = {
    "_pyrepl", "ctypes", "curses", "ensurepip", "idlelib", "lib2to3",
    "pydoc_data", "site-packages", "sqlite3", "test", "tkinter", "turtle.py",
    "turtledemo",
}
# Kept from pruned packages: pydoc (and so help()) imports _pyrepl.pager.
KEEP = {"_pyrepl/__init__.py", "_pyrepl/pager.py"}
PRUNE_DIRS = {"__pycache__"}  # at any depth


def collect(lib):
    """Yield (relative posix path, absolute path) of the files to ship."""
    for root, dirs, files in os.walk(lib):
        rel_root = os.path.relpath(root, lib)
        rel_root = "" if rel_root == "." else rel_root.replace(os.sep, "/") + "/"
        dirs[:] = sorted(d for d in dirs if d not in PRUNE_DIRS)
        for name in sorted(files):
            rel = rel_root + name
            if rel.split("/", 1)[0] in PRUNE_TOP and rel not in KEEP:
                continue
            yield rel, os.path.join(root, name)


HUNK = re.compile(rb"@@ -(\d+)(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def parse_patch(path):
    """Return {path relative to Lib/: [(old start, old lines, new lines)]}.

    Text before the first '--- ' line is the patch's description."""
    with open(path, "rb") as f:
        lines = f.read().splitlines(keepends=True)
    files, hunks, i = {}, None, 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(b"--- a/Lib/") and lines[i + 1].startswith(b"+++ b/Lib/"):
            hunks = files.setdefault(lines[i + 1][10:].strip().decode(), [])
            i += 2
            continue
        m = HUNK.match(line)
        if m and hunks is not None:
            n_old, n_new = int(m.group(2) or 1), int(m.group(3) or 1)
            old, new, i = [], [], i + 1
            while (len(old) < n_old or len(new) < n_new) and i < len(lines):
                tag, text = lines[i][:1], lines[i][1:]
                if tag in (b" ", b"-"):
                    old.append(text)
                if tag in (b" ", b"+"):
                    new.append(text)
                if tag not in (b" ", b"-", b"+"):
                    sys.exit(f"mkstdlib: {path}: bad hunk line {i + 1}")
                i += 1
            if (len(old), len(new)) != (n_old, n_new):
                sys.exit(f"mkstdlib: {path}: hunk at line {i} is cut short")
            hunks.append((int(m.group(1)), old, new))
            continue
        if hunks is not None and line.strip():
            sys.exit(f"mkstdlib: {path}: unexpected line {i + 1}")
        i += 1
    if not files:
        sys.exit(f"mkstdlib: {path}: no file to patch")
    return files


def apply(source, hunks, what):
    """Apply hunks to source (bytes) where their line numbers say, exactly."""
    lines = source.splitlines(keepends=True)
    shift = 0
    for start, old, new in hunks:
        at = start - 1 + shift if old else start + shift
        if lines[at:at + len(old)] != old:
            sys.exit(f"mkstdlib: {what}: hunk at line {start} does not apply")
        lines[at:at + len(old)] = new
        shift += len(new) - len(old)
    return b"".join(lines)


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
    ap.add_argument("--patch", action="append", default=[],
                    help="a unified diff against Lib/ (paths a/Lib/..., b/Lib/...)")
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
    patches = {}
    for path in args.patch:
        for rel, hunks in parse_patch(path).items():
            if rel not in files:
                sys.exit(f"mkstdlib: {path}: {rel} is not shipped")
            patches.setdefault(rel, []).append((path, hunks))

    # Zip dates have no zone and start in 1980.
    date = time.gmtime(max(args.epoch, 315532800))[:6]
    entries = {}
    for rel in sorted(files):
        with open(files[rel], "rb") as f:
            data = f.read()
        for path, hunks in patches.get(rel, ()):
            data = apply(data, hunks, f"{path}: {rel}")
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
