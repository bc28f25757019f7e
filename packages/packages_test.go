package packages_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/internal/testing/wheeltest"
	"github.com/wasmpy/wasmpy/packages"
)

const testdata = "../testdata/packages"

var (
	sandboxOnce sync.Once
	sandbox     *wasmpy.Sandbox
	sandboxErr  error
)

// python compiles in the sandbox `make` installed, as `wasmpy pkg build` does.
func python(t testing.TB) func(context.Context, string, []byte) ([]byte, error) {
	sandboxOnce.Do(func() {
		sandbox, sandboxErr = wasmpy.New(context.Background(), wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER")})
	})
	require.NoError(t, sandboxErr, "run `make` first to install the interpreter")
	return func(ctx context.Context, code string, stdin []byte) ([]byte, error) {
		res, err := sandbox.Run(ctx, wasmpy.Job{Code: code, Stdin: bytes.NewReader(stdin), Limits: wasmpy.Limits{Timeout: 5 * time.Minute, Memory: 1 << 30, Output: 64 << 20}})
		if err != nil {
			return nil, err
		}
		if err := res.Err(); err != nil {
			return nil, errors.New(res.Stderr)
		}
		return []byte(res.Stdout), nil
	}
}

func build(t *testing.T, inputs ...string) ([]byte, *packages.Manifest, error) {
	return packages.Build(context.Background(), packages.BuildOptions{Inputs: inputs, Python: python(t)})
}

func TestBuild(t *testing.T) {
	wheel := wheeltest.Wheel(t, filepath.Join(testdata, "tinyvec"), t.TempDir(), "tinyvec-1.2.0-py3-none-any.whl")
	set, m, err := build(t, wheel, filepath.Join(testdata, "greet"))
	require.NoError(t, err)

	// The same inputs, copied elsewhere, give the same bytes.
	other := t.TempDir()
	wheel2 := filepath.Join(other, filepath.Base(wheel))
	data, err := os.ReadFile(wheel)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(wheel2, data, 0o644))
	require.NoError(t, os.CopyFS(filepath.Join(other, "greet"), os.DirFS(filepath.Join(testdata, "greet"))))
	again, _, err := build(t, wheel2, filepath.Join(other, "greet"))
	require.NoError(t, err)
	require.True(t, bytes.Equal(set, again), "two builds of the same inputs differ")

	require.Equal(t, packages.Format, m.Format)
	require.Equal(t, "cpython-313", m.Python)
	require.Equal(t, []string{"greet", "tinyvec"}, m.Modules)
	require.Equal(t, []packages.Distribution{{Name: "tinyvec", Version: "1.2.0", Input: filepath.Base(wheel)}}, m.Distributions)
	require.Len(t, m.Inputs, 2)
	require.Equal(t, packages.Info{Name: "tinyvec-1.2.0-py3-none-any.whl", Kind: "wheel", SHA256: sha256File(t, wheel)}, m.Inputs[0])
	require.Equal(t, "dir", m.Inputs[1].Kind)
	require.Len(t, m.Inputs[1].SHA256, 64)

	zr, err := zip.NewReader(bytes.NewReader(set), int64(len(set)))
	require.NoError(t, err)
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		require.Equal(t, zip.Store, f.Method, f.Name)
	}
	require.Equal(t, []string{
		"greet/__init__.py", "greet/__pycache__/__init__.cpython-313.pyc", "greet/template.txt",
		"tinyvec-1.2.0.dist-info/METADATA", "tinyvec-1.2.0.dist-info/RECORD", "tinyvec-1.2.0.dist-info/WHEEL",
		"tinyvec/__init__.py", "tinyvec/__pycache__/__init__.cpython-313.pyc", "tinyvec/__pycache__/ops.cpython-313.pyc",
		"tinyvec/ops.py", packages.ManifestName,
	}, names)
	pyc := readZip(t, zr, "tinyvec/__pycache__/ops.cpython-313.pyc")
	require.Equal(t, []byte{0xf3, 0x0d, 0x0d, 0x0a}, pyc[:4], "CPython 3.13's bytecode magic")
	require.Equal(t, []byte{1, 0, 0, 0}, pyc[4:8], "an unchecked hash-based pyc")

	// What --packages does: the set, checked again, as site-packages.
	path := filepath.Join(t.TempDir(), "set.zip")
	require.NoError(t, os.WriteFile(path, set, 0o644))
	s, err := packages.Open(path)
	require.NoError(t, err)
	require.Equal(t, *m, s.Manifest)
	site, err := packages.Mount(s)
	require.NoError(t, err)
	entries, err := fs.ReadDir(site, ".")
	require.NoError(t, err)
	require.Equal(t, []string{"greet", "tinyvec", "tinyvec-1.2.0.dist-info"}, dirNames(entries))
	src, err := fs.ReadFile(site, "tinyvec/ops.py")
	require.NoError(t, err)
	require.Contains(t, string(src), "def dot(a, b)")
}

// A module the interpreter cannot compile is kept, without bytecode, and
// named in the manifest: importing it raises its SyntaxError.
func TestBuildKeepsUncompilable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "py2only")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "__init__.py"), []byte("print 'hello'\n"), 0o644))
	_, m, err := build(t, dir)
	require.NoError(t, err)
	require.Contains(t, m.Uncompiled["py2only/__init__.py"], "SyntaxError")
}

func TestBuildRefuses(t *testing.T) {
	tmp := t.TempDir()
	tinyvec := filepath.Join(testdata, "tinyvec")
	badHash := func() string {
		files := wheeltest.Files(t, tinyvec)
		wheeltest.Record(t, files)
		files["tinyvec/ops.py"] = append(files["tinyvec/ops.py"], "\nimport os; os.system('sh')\n"...)
		p := filepath.Join(tmp, "tampered-1.0-py3-none-any.whl")
		wheeltest.Zip(t, p, files)
		return p
	}
	slip := func() string {
		files := wheeltest.Files(t, tinyvec)
		files["../evil.py"] = []byte("print('outside')\n")
		wheeltest.Record(t, files)
		p := filepath.Join(tmp, "slip-1.0-py3-none-any.whl")
		wheeltest.Zip(t, p, files)
		return p
	}
	corrupt := func() string {
		p := filepath.Join(tmp, "corrupt-1.0-py3-none-any.whl")
		require.NoError(t, os.WriteFile(p, []byte("PK\x03\x04 this is not a whole zip"), 0o644))
		return p
	}
	for _, tc := range []struct {
		name, input, file, reason string
	}{
		{"native", wheeltest.Wheel(t, filepath.Join(testdata, "fastmath"), tmp, "fastmath-0.1-cp313-cp313-linux_x86_64.whl"),
			"fastmath-0.1-cp313-cp313-linux_x86_64.whl", "fastmath/_speed.cpython-313-x86_64-linux-gnu.so: native extension module"},
		{"record mismatch", badHash(), "tampered-1.0-py3-none-any.whl", "tinyvec/ops.py: RECORD hash mismatch"},
		{"zip slip", slip(), "slip-1.0-py3-none-any.whl", `entry "../evil.py": a path that climbs out`},
		{"corrupt zip", corrupt(), "corrupt-1.0-py3-none-any.whl", "not a wheel: not a readable zip"},
		{"shadows stdlib", filepath.Join(testdata, "shadow"), "shadow/json/__init__.py", "shadows the module json"},
		{"missing", filepath.Join(tmp, "nope.whl"), "nope.whl", "no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, _, err := build(t, tc.input)
			require.Nil(t, set)
			var pe *packages.Error
			require.ErrorAs(t, err, &pe)
			require.True(t, strings.HasSuffix(pe.File, tc.file), pe.File)
			require.Contains(t, pe.Reason, tc.reason)
			require.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestBuildRefusesLinks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "site")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "leak"), 0o755))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "leak", "passwd.txt")))
	_, _, err := build(t, dir)
	var pe *packages.Error
	require.ErrorAs(t, err, &pe)
	require.Contains(t, pe.Reason, "symbolic link")
}

// Open checks a set as Build would have made it: a set from elsewhere gets
// no more trust than an input.
func TestOpenRefuses(t *testing.T) {
	manifest := []byte(`{"format":"` + packages.Format + `"}`)
	for _, tc := range []struct {
		name   string
		files  map[string][]byte
		reason string
	}{
		{"zip slip", map[string][]byte{packages.ManifestName: manifest, "../../etc/x.py": nil}, "climbs out"},
		{"absolute", map[string][]byte{packages.ManifestName: manifest, "/etc/x.py": nil}, "absolute path"},
		{"native", map[string][]byte{packages.ManifestName: manifest, "m/_c.abi3.so": nil}, "native extension module"},
		{"shadows stdlib", map[string][]byte{packages.ManifestName: manifest, "os.py": nil}, "shadows the module os"},
		{"no manifest", map[string][]byte{"m.py": nil}, "no " + packages.ManifestName},
		{"other format", map[string][]byte{packages.ManifestName: []byte(`{"format":"x"}`)}, `format "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "set.zip")
			wheeltest.Zip(t, p, tc.files)
			_, err := packages.Open(p)
			var pe *packages.Error
			require.ErrorAs(t, err, &pe)
			require.Equal(t, p, pe.File)
			require.Contains(t, pe.Reason, tc.reason)
		})
	}
}

// Two sets may not both provide a file: which one the guest saw would
// depend on the order of the flags.
func TestMountRefusesOverlap(t *testing.T) {
	manifest := []byte(`{"format":"` + packages.Format + `"}`)
	a, b := filepath.Join(t.TempDir(), "a.zip"), filepath.Join(t.TempDir(), "b.zip")
	wheeltest.Zip(t, a, map[string][]byte{packages.ManifestName: manifest, "m/__init__.py": []byte("x = 1")})
	wheeltest.Zip(t, b, map[string][]byte{packages.ManifestName: manifest, "m/__init__.py": []byte("x = 2")})
	sa, err := packages.Open(a)
	require.NoError(t, err)
	sb, err := packages.Open(b)
	require.NoError(t, err)
	_, err = packages.Mount(sa, sb)
	var pe *packages.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, b, pe.File)
	require.Equal(t, "m/__init__.py is also in "+a, pe.Reason)
}

func readZip(t *testing.T, zr *zip.Reader, name string) []byte {
	t.Helper()
	data, err := fs.ReadFile(zr, name)
	require.NoError(t, err)
	return data
}

func dirNames(entries []fs.DirEntry) []string {
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func sha256File(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	return fmt.Sprintf("%x", sha256.Sum256(data))
}

// Reserved's list is the interpreter's own sys.stdlib_module_names.
func TestReservedIsTheStdlib(t *testing.T) {
	out, err := python(t)(context.Background(), "import sys, json; print(json.dumps(sorted(sys.stdlib_module_names)))", nil)
	require.NoError(t, err)
	var names []string
	require.NoError(t, json.Unmarshal(out, &names))
	require.Greater(t, len(names), 200)
	for _, n := range names {
		require.True(t, packages.Reserved(n), n)
	}
	for _, n := range []string{"sympy", "six", "tinyvec", "test_json", "jsonschema"} {
		require.False(t, packages.Reserved(n), n)
	}
	require.True(t, packages.Reserved("wasmpy"))
}
