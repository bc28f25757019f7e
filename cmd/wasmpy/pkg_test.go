package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/internal/testing/wheeltest"
)

const testPackages = "../../testdata/packages"

func TestPkgBuildAndExec(t *testing.T) {
	tmp := t.TempDir()
	wheel := wheeltest.Wheel(t, filepath.Join(testPackages, "tinyvec"), tmp, "tinyvec-1.2.0-py3-none-any.whl")
	set := filepath.Join(tmp, "set.zip")
	code, out, errOut := wasmpyCLI(t, "", "pkg", "build", "--out", set, wheel, filepath.Join(testPackages, "greet"))
	require.Equal(t, 0, code, errOut)
	require.Empty(t, out)
	data, err := os.ReadFile(set)
	require.NoError(t, err)
	sum := fmt.Sprintf("%x", sha256.Sum256(data))
	require.Equal(t, fmt.Sprintf("wasmpy: wrote %s: 1 distributions, modules greet, tinyvec; sha256 %s\n", set, sum), errOut)

	code, out, errOut = wasmpyCLI(t, "", "exec", "--packages", set, "--json", "-c",
		"import tinyvec, greet\nprint(tinyvec.__version__, tinyvec.dot([1, 2], [3, 4]))\nprint(greet.greeting('Ada'))")
	require.Equal(t, 0, code, errOut)
	var res struct {
		Stdout   string
		Packages []struct{ Name, SHA256 string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Equal(t, "1.2.0 11\nHello, Ada, from a package set!\n", res.Stdout)
	require.Len(t, res.Packages, 1)
	require.Equal(t, "set.zip", res.Packages[0].Name)
	require.Equal(t, sum, res.Packages[0].SHA256)

	// The set is read-only in the guest.
	code, _, errOut = wasmpyCLI(t, "", "exec", "--packages", set, "-c",
		"import tinyvec, os\nopen(os.path.join(os.path.dirname(tinyvec.__file__), 'x.py'), 'w')")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "OSError: [Errno 69] Read-only file system: '/usr/local/lib/python3.13/site-packages/tinyvec/x.py'")

	code, out, errOut = wasmpyCLI(t, "", "pkg", "show", set)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"name": "tinyvec"`)
	require.Contains(t, out, sum)
}

// Every refused input or set is one line naming the file and the reason,
// exit 2, and nothing runs.
func TestPkgBadInput(t *testing.T) {
	tmp := t.TempDir()
	files := wheeltest.Files(t, filepath.Join(testPackages, "tinyvec"))
	wheeltest.Record(t, files)
	files["tinyvec/ops.py"] = []byte("def add(a, b): return 'tampered'\n")
	tampered := filepath.Join(tmp, "tampered-1.0-py3-none-any.whl")
	wheeltest.Zip(t, tampered, files)
	slipFiles := wheeltest.Files(t, filepath.Join(testPackages, "tinyvec"))
	slipFiles["tinyvec/../../evil.py"] = []byte("x = 1\n")
	wheeltest.Record(t, slipFiles)
	slip := filepath.Join(tmp, "slip-1.0-py3-none-any.whl")
	wheeltest.Zip(t, slip, slipFiles)
	corrupt := filepath.Join(tmp, "corrupt.zip")
	require.NoError(t, os.WriteFile(corrupt, []byte("PK\x05\x06 truncated"), 0o644))
	native := wheeltest.Wheel(t, filepath.Join(testPackages, "fastmath"), tmp, "fastmath-0.1-cp313-cp313-linux_x86_64.whl")
	out := filepath.Join(tmp, "out.zip")

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"native", []string{"pkg", "build", "--out", out, native},
			native + ": fastmath/_speed.cpython-313-x86_64-linux-gnu.so: native extension module"},
		{"record mismatch", []string{"pkg", "build", "--out", out, tampered}, tampered + ": tinyvec/ops.py: RECORD hash mismatch"},
		{"zip slip", []string{"pkg", "build", "--out", out, slip}, slip + `: entry "tinyvec/../../evil.py": a path that climbs out`},
		{"corrupt zip", []string{"pkg", "build", "--out", out, corrupt}, corrupt + ": not a wheel: not a readable zip"},
		{"shadows stdlib", []string{"pkg", "build", "--out", out, filepath.Join(testPackages, "shadow")},
			filepath.Join(testPackages, "shadow", "json", "__init__.py") + ": shadows the module json"},
		{"no inputs", []string{"pkg", "build", "--out", out}, "pkg build: no input"},
		{"set missing", []string{"exec", "--packages", filepath.Join(tmp, "nope.zip"), "-c", "print('ran')"},
			filepath.Join(tmp, "nope.zip") + ": no such file or directory"},
		{"set corrupt", []string{"exec", "--packages", corrupt, "-c", "print('ran')"}, corrupt + ": not a package set: not a readable zip"},
		{"a wheel is not a set", []string{"exec", "--packages", tampered, "-c", "print('ran')"}, tampered + ": not a package set: no wasmpy-packages.json"},
		{"preload missing", []string{"exec", "--preload", "no_such_module", "-c", "print('ran')"},
			"preload no_such_module: ModuleNotFoundError: No module named 'no_such_module'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, errOut := wasmpyCLI(t, "", tc.args...)
			require.Equal(t, exitUsage, code, errOut)
			require.Empty(t, stdout)
			require.True(t, strings.HasPrefix(errOut, "wasmpy: "+tc.want), errOut)
			require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
			_, err := os.Stat(out)
			require.True(t, os.IsNotExist(err), "no set written")
		})
	}
}
