package wasmpy_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/workspace"
)

// runChecks runs Python that asserts what it expects and prints "ok".
func runChecks(t *testing.T, sb *wasmpy.Sandbox, job wasmpy.Job) *wasmpy.Result {
	t.Helper()
	job.Grants = wasmpy.Builtins()
	var res *wasmpy.Result
	if sb == nil {
		res = run(t, job)
	} else {
		res = runIn(t, sb, job)
	}
	require.Nil(t, res.Error, res.Stderr)
	require.True(t, strings.HasSuffix(res.Stdout, "ok\n"), res.Stdout)
	return res
}

// The overlay alone: what ordinary Python does with files works, and the
// capabilities see the same files as open().
func TestFilesystemOverlay(t *testing.T) {
	res := runChecks(t, nil, wasmpy.Job{Code: `
import os, pathlib, shutil, glob, tempfile, zipfile, csv, json, io
assert os.getcwd() == "/workspace", os.getcwd()
assert sorted(os.listdir("/")) == ["tmp", "workspace"]
assert os.listdir(".") == []

with open("a.txt", "w") as f:
    f.write("hello\n")
assert read_file("a.txt") == "hello\n"
assert open("/workspace/a.txt").read() == "hello\n"
write_file("b/c.txt", "from write_file")
assert open("b/c.txt").read() == "from write_file"
with open("a.txt", "a") as f:
    f.write("more\n")
assert read_file("a.txt") == "hello\nmore\n"
with open("a.txt", "r+b") as f:
    f.seek(1); f.write(b"E"); f.seek(0, 2); assert f.tell() == 11
    f.truncate(5)
assert open("a.txt", "rb").read() == b"hEllo"
try:
    open("a.txt", "x")
    raise AssertionError("O_EXCL")
except FileExistsError:
    pass

os.makedirs("x/y/z")
os.makedirs("x/y/z", exist_ok=True)
assert os.path.isdir("x/y/z") and not os.path.isfile("x/y")
st = os.stat("b/c.txt")
assert st.st_size == 15 and st.st_ino != os.stat("a.txt").st_ino
assert sorted(e.name for e in os.scandir(".")) == ["a.txt", "b", "x"]
assert [e.is_dir() for e in sorted(os.scandir("."), key=lambda e: e.name)] == [False, True, True]
os.rename("a.txt", "x/y/a2.txt")
assert not os.path.exists("a.txt") and read_file("x/y/a2.txt") == "hEllo"
os.replace("x/y/a2.txt", "b/c.txt")
assert read_file("b/c.txt") == "hEllo"
os.rename("x", "x2")
assert os.listdir("x2/y") == ["z"] and not os.path.exists("x")
os.remove("b/c.txt")
assert not os.path.exists("b/c.txt")
try:
    read_file("b/c.txt")
    raise AssertionError("read_file after remove")
except FileNotFoundError:
    pass
os.rmdir("x2/y/z")
try:
    os.rmdir("x2")
    raise AssertionError("rmdir of a non-empty dir")
except OSError as e:
    assert "not empty" in str(e).lower(), e

p = pathlib.Path("data")
p.mkdir()
(p / "n.json").write_text(json.dumps({"n": 7}))
assert json.load(open("data/n.json")) == {"n": 7}
assert [q.name for q in p.iterdir()] == ["n.json"]
with open("data/t.csv", "w", newline="") as f:
    csv.writer(f).writerows([["a", "b"], [1, 2]])
assert list(csv.reader(open("data/t.csv"))) == [["a", "b"], ["1", "2"]]
assert sorted(glob.glob("**/*.*", recursive=True)) == ["data/n.json", "data/t.csv"]
shutil.copy("data/n.json", "data/copy.json")
shutil.copytree("data", "data2")
assert sorted(os.listdir("data2")) == ["copy.json", "n.json", "t.csv"]
shutil.rmtree("data2")
assert not os.path.exists("data2")
shutil.move("data/copy.json", "moved.json")
with zipfile.ZipFile("z.zip", "w") as z:
    z.write("moved.json")
    z.writestr("inner.txt", "zipped")
with zipfile.ZipFile("z.zip") as z:
    assert z.read("inner.txt") == b"zipped" and "moved.json" in z.namelist()

with tempfile.TemporaryDirectory() as d:
    assert d.startswith("/tmp/"), d
    open(os.path.join(d, "t"), "w").write("scratch")
with tempfile.NamedTemporaryFile("w", delete=False, suffix=".txt") as tf:
    tf.write("kept in /tmp")
assert os.path.dirname(tf.name) == "/tmp"
shutil.move(tf.name, "from_tmp.txt")
assert read_file("from_tmp.txt") == "kept in /tmp"
open("/tmp/scratch", "w").write("never reported")
assert sorted(list_files("**")) == ["data/n.json", "data/t.csv", "from_tmp.txt", "moved.json", "z.zip"], list_files("**")
print("ok")
`})
	var paths []string
	for _, f := range res.Files {
		paths = append(paths, f.Path)
	}
	require.Equal(t, []string{"data/n.json", "data/t.csv", "from_tmp.txt", "moved.json", "z.zip"}, paths, "/tmp is not reported")
	b, ok := res.File("moved.json")
	require.True(t, ok)
	require.JSONEq(t, `{"n": 7}`, string(b))
}

// A file keeps its access time apart from its modification time, as Linux
// does: utime sets each (by path or by descriptor), and a write after it moves
// only the mtime.
func TestFilesystemTimes(t *testing.T) {
	runChecks(t, nil, wasmpy.Job{Code: `
import os
open("f", "w").write("x")
st = os.stat("f")
assert st.st_atime_ns == st.st_mtime_ns, st
os.utime("f", ns=(1_000_000_001, 2_000_000_002))
st = os.stat("f")
assert (st.st_atime_ns, st.st_mtime_ns) == (1_000_000_001, 2_000_000_002), st
with open("f", "a") as f:
    os.utime(f.fileno(), (5, 6))
    st = os.fstat(f.fileno())
    assert (st.st_atime, st.st_mtime) == (5, 6), st
    f.write("y")
st = os.stat("f")
assert st.st_atime == 5 and st.st_mtime > 6, st
os.mkdir("d")
os.utime("d", (0, 3))
st = os.stat("d")
assert (st.st_atime, st.st_mtime) == (0, 3), st
print("ok")
`})
}

// os.set_blocking works on a workspace file (stable or overlay) as on a
// Linux one: the flag reads back; it changes nothing for a file.
func TestFilesystemNonblocking(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "in.txt"), []byte("stable"), 0o644))
	runChecks(t, nil, wasmpy.Job{Workspace: dir, Code: `
import os
for name, flags in (("in.txt", os.O_RDONLY), ("new.txt", os.O_RDWR | os.O_CREAT)):
    fd = os.open(name, flags)
    assert os.get_blocking(fd), name
    os.set_blocking(fd, False)
    assert not os.get_blocking(fd), name
    os.set_blocking(fd, True)
    assert os.get_blocking(fd), name
    os.close(fd)
fd = os.open("in.txt", os.O_RDONLY | os.O_NONBLOCK)
assert not os.get_blocking(fd) and os.read(fd, 100) == b"stable"
print("ok")
`})
}

// The stable layer reads through open() and os; every change lands in the
// overlay (a removal or rename as a whiteout) and never on the disk.
func TestFilesystemStable(t *testing.T) {
	dir := stableDir(t)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tree", "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tree", "sub", "leaf.txt"), []byte("leaf"), 0o644))
	before := treeHash(t, dir)
	res := runChecks(t, nil, wasmpy.Job{Workspace: dir, Code: `
import os, shutil, glob
assert open("notes.txt").read() == "alpha beta\nbeta gamma\n"
assert open("data/blob.bin", "rb").read() == bytes([0, 1, 2, 255])
assert sorted(os.listdir(".")) == ["data", "notes.txt", "tree"], os.listdir(".")
assert os.stat("notes.txt").st_size == 22
assert sorted(glob.glob("**", recursive=True)) == ["data", "data/blob.bin", "notes.txt", "tree", "tree/sub", "tree/sub/leaf.txt"]

with open("notes.txt", "a") as f:        # copied up, then appended to
    f.write("delta\n")
assert read_file("notes.txt").endswith("gamma\ndelta\n")
os.remove("data/blob.bin")                # a whiteout
assert not os.path.exists("data/blob.bin") and os.listdir("data") == []
assert "data/blob.bin" not in list_files("**")
try:
    read_file("data/blob.bin")
    raise AssertionError("read_file of a removed file")
except FileNotFoundError:
    pass
open("data/blob.bin", "w").write("new")    # made again, in the overlay
assert read_file("data/blob.bin") == "new"
os.rename("tree", "forest")               # a stable directory, copied up
assert open("forest/sub/leaf.txt").read() == "leaf" and not os.path.exists("tree")
shutil.rmtree("forest")
os.rmdir("data") if not os.listdir("data") else None
os.mkdir("tree")                          # where a removed stable dir was: opaque
assert os.listdir("tree") == []
print("ok")
`})
	require.Equal(t, before, treeHash(t, dir), "the stable dir was modified")
	var paths []string
	for _, f := range res.Files {
		paths = append(paths, f.Path)
	}
	require.Equal(t, []string{"data/blob.bin", "notes.txt"}, paths)
}

// Every escape read_file refuses is refused to open() and os too.
func TestFilesystemEscapes(t *testing.T) {
	dir := stableDir(t) // escape.txt -> a file outside
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	require.NoError(t, os.WriteFile(secret, []byte("host secret"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "escapedir")))
	require.NoError(t, os.Symlink(secret, filepath.Join(dir, "abslink")))
	require.NoError(t, os.Link(secret, filepath.Join(dir, "hardlink")))
	require.NoError(t, os.Symlink("notes.txt", filepath.Join(dir, "inlink")))
	before := treeHash(t, outside)
	res := runChecks(t, nil, wasmpy.Job{Workspace: dir, Code: `
import os
for p in ["escape.txt", "escapedir/secret.txt", "abslink", "hardlink",
          "../../../../etc/passwd", "/workspace/../../etc/passwd", "data/../../x"]:
    for how in ("open", "read_file", "stat"):
        try:
            if how == "open": open(p).read()
            elif how == "read_file": read_file(p)
            else: os.stat(p)
            raise AssertionError("%s %s was not refused" % (how, p))
        except (PermissionError, FileNotFoundError) as e:
            assert "host secret" not in str(e)
for p in ["escapedir/new.txt", "hardlink", "escape.txt"]:
    try:
        with open(p, "w") as f:
            f.write("PWNED")
        raise AssertionError("write %s was not refused" % p)
    except PermissionError:
        pass
try:
    os.rename("escape.txt", "mine.txt")
    raise AssertionError("rename of a link out")
except PermissionError:
    pass
names = os.listdir(".")
assert "escape.txt" not in names and "escapedir" not in names and "hardlink" not in names, names
assert open("inlink").read().startswith("alpha")   # a link that stays inside
assert os.path.islink("inlink") and os.readlink("inlink") == "notes.txt"
assert os.path.samefile("inlink", "notes.txt") and not os.path.samefile("inlink", "data")
print("ok")
`})
	require.Empty(t, res.Files)
	require.Equal(t, before, treeHash(t, outside), "a file outside was touched")
}

// The workspace's limits hold for open() as for write_file: EIO, since
// WASI's errno set in wazero has no ENOSPC or EFBIG.
func TestFilesystemLimits(t *testing.T) {
	sb := newSandbox(t, wasmpy.Config{Workspace: workspace.Config{MaxFileBytes: 1 << 20, MaxOverlayBytes: 3 << 20, MaxFiles: 5}})
	runChecks(t, sb, wasmpy.Job{Code: `
import errno, os
def fails(fn):
    try:
        fn()
    except OSError as e:
        assert e.errno == errno.EIO, e
        return
    raise AssertionError("not refused")
def big():
    with open("big", "wb") as f:
        f.write(b"x" * (1 << 20 + 1))
fails(big)
os.remove("big")
for i in range(3):
    with open("f%d" % i, "wb") as f:
        f.write(b"x" * (1 << 20))
fails(lambda: open("f3", "wb").write(b"x" * (1 << 20)))  # quota
open("small", "w").close()                               # f0-f2, f3 (empty), small
fails(lambda: open("one-too-many", "w"))                 # file count
fails(lambda: open("/tmp/one-too-many", "w"))            # /tmp shares them
print("ok")
`})
}

// The standard library mount is read-only as Linux would have it.
func TestStdlibMountReadOnly(t *testing.T) {
	runChecks(t, nil, wasmpy.Job{Code: `
import errno, os, sys
lib, src = sys._stdlib_dir, os.__file__
size = os.stat(src).st_size
for mode in ("w", "a", "r+", "wb"):
    try:
        open(src, mode)
        raise AssertionError("open %s succeeded" % mode)
    except OSError as e:
        assert e.errno == errno.EROFS, e
for fn in (lambda: os.chmod(src, 0o777), lambda: os.remove(src), lambda: os.mkdir(lib + "/x"),
           lambda: open(lib + "/new.py", "w"), lambda: os.rename(src, lib + "/z")):
    try:
        fn()
        raise AssertionError("a change to the stdlib mount succeeded")
    except OSError as e:
        assert e.errno in (errno.EROFS, errno.EACCES), e
assert os.stat(src).st_size == size
import json  # the stdlib still imports
# The guard that makes chmod fail here introspects as the builtin it wraps.
import inspect, posix
assert (os.chmod.__name__, os.chmod.__module__, os.chmod.__doc__) == ("chmod", "posix", posix.chmod.__doc__)
assert os.chmod.__text_signature__ == posix.chmod.__text_signature__ != None
try:
    inspect.signature(os.chmod)
    raise AssertionError("a signature that native CPython cannot give")
except ValueError:
    pass
print("ok")
`})
}

// The file system is part of every run, granted capabilities or not: a
// script may always keep scratch files; the stable directory is there only
// when the caller names one.
func TestFilesystemWithoutGrants(t *testing.T) {
	res := run(t, wasmpy.Job{Code: `
open("scratch.txt", "w").write("mine")
print(open("scratch.txt").read())
`})
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "mine\n", res.Stdout)
	require.Len(t, res.Files, 1)
}
