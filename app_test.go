package wasmpy_test

import (
	"archive/zip"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
)

// writeTree writes files (path -> content) under a new directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(data), 0o644))
	}
	return dir
}

// zipOf is a zip of files, in the order given (name, content, ...).
func zipOf(t *testing.T, prefix string, files ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(prefix)
	zw := zip.NewWriter(&b)
	zw.SetOffset(int64(len(prefix)))
	for i := 0; i < len(files); i += 2 {
		w, err := zw.Create(files[i])
		require.NoError(t, err)
		_, err = w.Write([]byte(files[i+1]))
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return b.Bytes()
}

func openApp(t *testing.T, path string) *wasmpy.App {
	t.Helper()
	app, err := wasmpy.OpenApp(path)
	require.NoError(t, err)
	t.Cleanup(func() { app.Close() })
	return app
}

// A program of several files: what python3 sees of a script's directory,
// the guest sees at /app, with the same imports, __file__ and sys.argv.
var appFiles = map[string]string{
	"main.py": `import sys, helper
from pkg import sub
print("main", __name__, __file__, sys.argv, sys.path[0])
print(helper.NAME, sub.value(), sub.__file__)
`,
	"helper.py":       "NAME = 'helper'\n",
	"pkg/__init__.py": "",
	"pkg/sub.py": `from . import deep
from .inner.leaf import LEAF
def value():
    return deep.X + LEAF
`,
	"pkg/deep.py":           "X = 40\n",
	"pkg/inner/__init__.py": "",
	"pkg/inner/leaf.py":     "LEAF = 2\n",
	"pkg/__main__.py": `import sys
from .deep import X
print("pkg main", __name__, __spec__.name, __file__, sys.argv, sys.path[0], X)
`,
	"__main__.py": `import sys, helper
print("dir main", __name__, __spec__.name, __file__, sys.argv, sys.path[0], helper.NAME)
`,
	"data/table.txt": "a table\n",
}

func TestAppScript(t *testing.T) {
	dir := writeTree(t, appFiles)
	app := openApp(t, dir)
	main, err := os.ReadFile(filepath.Join(dir, "main.py"))
	require.NoError(t, err)
	res := run(t, wasmpy.Job{App: app, Code: string(main), Filename: "/app/main.py", Args: []string{"x"}})
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "main __main__ /app/main.py ['/app/main.py', 'x'] /app\nhelper 42 /app/pkg/sub.py\n", res.Stdout)
}

func TestAppDirMain(t *testing.T) {
	app := openApp(t, writeTree(t, appFiles))
	res := run(t, wasmpy.Job{App: app, Args: []string{"y"}})
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "dir main __main__ __main__ /app/__main__.py ['/app', 'y'] /app helper\n", res.Stdout, "as python3 DIR")

	res = run(t, wasmpy.Job{App: app, Module: "pkg", Args: []string{"z"}})
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "pkg main __main__ pkg.__main__ /app/pkg/__main__.py ['/app/pkg/__main__.py', 'z'] /app 40\n", res.Stdout, "as python3 -m pkg")

	_, err := testSandbox(t).Run(context.Background(), wasmpy.Job{App: openApp(t, writeTree(t, map[string]string{"x.py": ""}))})
	require.ErrorIs(t, err, wasmpy.ErrNoMain)
}

func TestAppZip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.pyz")
	data := zipOf(t, "#!/usr/bin/env python3\n",
		"__main__.py", "import sys, mod, pkgutil\nprint(__file__, sys.argv, mod.F, pkgutil.get_data('mod', 'res.txt'))\n",
		"mod.py", "F = 'from the zip'\n", "res.txt", "resource")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	res := run(t, wasmpy.Job{App: openApp(t, path)})
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "/app/__main__.py ['/app'] from the zip b'resource'\n", res.Stdout)
}

// A zipapp made by python3 -m zipapp, with a #! line and a main function.
func TestAppPythonZipapp(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	src := writeTree(t, map[string]string{
		"tool/__init__.py": "",
		"tool/cli.py":      "import sys\ndef main():\n    print('tool', sys.argv[1:])\n",
	})
	out := filepath.Join(t.TempDir(), "tool.pyz")
	cmd := exec.Command(python, "-m", "zipapp", src, "-o", out, "-p", "/usr/bin/env python3", "-m", "tool.cli:main")
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, string(msg))
	res := run(t, wasmpy.Job{App: openApp(t, out), Args: []string{"a", "b"}})
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "tool ['a', 'b']\n", res.Stdout)
}

// An App need not be on disk: generated files serve as well.
func TestAppFS(t *testing.T) {
	app := fstest.MapFS{
		"__main__.py": {Data: []byte("import gen\nprint(gen.V, open('/app/gen.py').read().strip())\n")},
		"gen.py":      {Data: []byte("V = 7\n")},
	}
	res := run(t, wasmpy.Job{App: app})
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "7 V = 7\n", res.Stdout)
}

// The program is read-only; what its directory links to outside, what
// starts with ".", and a file with another name elsewhere stay out.
func TestAppConfinement(t *testing.T) {
	outside := writeTree(t, map[string]string{"secret.txt": "top secret"})
	dir := writeTree(t, map[string]string{"main.py": "", ".env": "TOKEN=1", ".git/config": "x", "ok.txt": "fine"})
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "out_abs")))
	require.NoError(t, os.Symlink("../"+filepath.Base(outside)+"/secret.txt", filepath.Join(dir, "out_rel")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "out_dir")))
	require.NoError(t, os.Symlink("ok.txt", filepath.Join(dir, "in_link")))
	if err := os.Link(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "hard.txt")); err != nil {
		t.Logf("no hard link: %v", err)
	}
	res := runChecks(t, nil, wasmpy.Job{App: openApp(t, dir), Code: `
import os, errno
assert sorted(os.listdir("/app")) == ["in_link", "main.py", "ok.txt"], os.listdir("/app")
assert open("/app/in_link").read() == "fine"
for p in ["/app/out_abs", "/app/out_rel", "/app/out_dir/secret.txt", "/app/hard.txt", "/app/.env", "/app/.git/config", "/app/../` + filepath.Base(outside) + `/secret.txt"]:
    try:
        open(p).read()
    except (PermissionError, FileNotFoundError):
        pass
    else:
        raise AssertionError(p + " was readable")
for change in [lambda: open("/app/new.txt", "w"), lambda: open("/app/ok.txt", "a"), lambda: os.remove("/app/ok.txt"),
               lambda: os.mkdir("/app/d"), lambda: os.rename("/app/ok.txt", "/app/x.txt"),
               lambda: os.rename("/app/ok.txt", "/workspace/x.txt"), lambda: os.chmod("/app/ok.txt", 0o777),
               lambda: os.rmdir("/app")]:
    try:
        change()
    except OSError as e:
        # wazero answers a rename between mounts with ENOSYS, not EXDEV.
        assert e.errno in (errno.EROFS, errno.ENOSYS, errno.EBUSY, errno.EACCES), e
    else:
        raise AssertionError("a change to /app succeeded")
assert open("/app/ok.txt").read() == "fine"
print("ok")
`})
	require.Empty(t, res.Files)
	data, err := os.ReadFile(filepath.Join(dir, "ok.txt"))
	require.NoError(t, err)
	require.Equal(t, "fine", string(data))
}

// A run with no App sees an empty /app, whatever the runs before it had.
func TestAppNone(t *testing.T) {
	sb := testSandbox(t)
	runIn(t, sb, wasmpy.Job{App: fstest.MapFS{"__main__.py": {Data: []byte("")}}})
	res := runChecks(t, sb, wasmpy.Job{Code: `
import os, sys
assert os.listdir("/app") == [] and "/app" not in sys.path, (os.listdir("/app"), sys.path)
print("ok")
`})
	require.Empty(t, res.Stderr)
}

func TestOpenAppRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o644))
		return p
	}
	good := zipOf(t, "", "__main__.py", "print(1)\n")
	for _, tc := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "none.pyz"), "no such file or directory"},
		{"not a zip", write("text.pyz", []byte("print(1)\n")), "not a directory, nor a valid zip file"},
		{"truncated", write("cut.pyz", good[:len(good)-10]), "not a directory, nor a valid zip file"},
		{"zip slip", write("slip.pyz", zipOf(t, "", "../evil.py", "x")), `entry "../evil.py": not a relative path inside the zip`},
		{"absolute", write("abs.pyz", zipOf(t, "", "/etc/evil.py", "x")), `entry "/etc/evil.py": not a relative path inside the zip`},
		{"twice", write("dup.pyz", zipOf(t, "", "a.py", "1", "a.py", "2")), `entry "a.py" appears twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := wasmpy.OpenApp(tc.path)
			require.EqualError(t, err, "wasmpy: "+tc.path+": "+tc.want)
		})
	}
}
