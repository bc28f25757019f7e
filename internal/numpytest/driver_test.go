package numpytest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/assets"
)

// A small test directory through the real driver, pytest and sci
// interpreter: a directory runs file by file, so a file that ends its run
// costs only itself; every failure and error is named with its file and
// reason, a setup error apart from a failure; `import ctypes` (or mmap) at
// a test module's top skips only the tests that use it (the modules it
// imports, and a guarded import, still find none), as capfd does (it
// would break the capture of every later test); a listed file is left out
// with its reason; the run is judged against a list of expected failures.
func TestSuiteReportsPerFile(t *testing.T) {
	tree := t.TempDir()
	files := map[string]string{
		"pkg/tests/test_mix.py": `
import ctypes
import mmap
import os
import sys
from ctypes import c_double
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import helper_ctypes

def test_capfd(capfd):
    print("fd 1 cannot be dup()ed on WASI")

def test_pass():
    pass

def test_helper_sees_no_ctypes():
    assert helper_ctypes.ctypes is None

def test_fail():
    assert 1 == 2, "one is not two"

@pytest.fixture
def broken():
    raise RuntimeError("the fixture broke")

def test_setup_error(broken):
    pass

@pytest.mark.skipif(not hasattr(ctypes, "pythonapi"), reason="needs pythonapi")
def test_ctypes():
    class S(ctypes.Structure):
        _fields_ = [("a", ctypes.c_uint8)]

def test_ctypes_name():
    c_double(1.5)

def test_ctypes_dtype():
    import numpy as np
    np.dtype(ctypes.c_size_t)

def test_mmap():
    mmap.mmap(-1, 10)

@pytest.mark.skip(reason="by choice")
def test_skip():
    pass

@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False
`,
		"pkg/tests/helper_ctypes.py": "try:\n    import ctypes\nexcept ImportError:\n    ctypes = None\n",
		"pkg/tests/test_noimport.py": "import no_such_module\n\ndef test_never():\n    pass\n",
		"pkg/tests/test_exit.py":     "import os\n\ndef test_exit():\n    os._exit(3)\n",
		"pkg/tests/test_later.py": `
try:
    import ctypes
except ImportError:
    ctypes = None
import pytest

def test_after_the_exit():
    pass

@pytest.mark.skipif(ctypes is None, reason="its own guard")
def test_guarded():
    ctypes.CDLL
`,
		"pkg/tests/test_left.py":     "def test_left_out():\n    pass\n",
		"pkg/tests/sub/test_deep.py": "def test_deep():\n    pass\n",
	}
	for name, code := range files {
		require.NoError(t, os.MkdirAll(filepath.Join(tree, filepath.Dir(name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(tree, name), []byte(code), 0o644))
	}
	s := suite{pkg: "pkg", env: "WASMPY_NUMPY_TESTS", list: "expected_failures.txt", notRun: map[string]string{"pkg/tests/test_left.py": "needs a fork"}}
	got, left, err := s.testFiles(tree, []string{"pkg/tests"})
	require.NoError(t, err)
	require.Equal(t, []string{"pkg/tests/test_exit.py", "pkg/tests/test_later.py", "pkg/tests/test_mix.py", "pkg/tests/test_noimport.py"}, got)
	require.Equal(t, map[string]string{"pkg/tests/test_left.py": "needs a fork"}, left)
	// A recursive suite's directory (pandas') also gives its subdirectories' files.
	deep := s
	deep.recursive = true
	all, _, err := deep.testFiles(tree, []string{"pkg/tests/sub", "pkg/tests", "pkg/tests/test_mix.py"})
	require.NoError(t, err)
	require.Equal(t, append([]string{"pkg/tests/sub/test_deep.py"}, got...), all, "each file once, in the order selected")
	_, _, err = s.testFiles(tree, []string{"pkg/nothing"})
	require.EqualError(t, err, "WASMPY_NUMPY_TESTS: pkg/nothing is not in pkg's source tree")

	sb := pytestSandbox(t)
	sum := tally{name: "pkg"}
	outcomes := map[string]outcome{}
	for _, f := range got {
		o, err := s.runFile(context.Background(), sb, tree, f)
		sum.add(f, o, err)
		if f == "pkg/tests/test_exit.py" {
			require.Error(t, err)
			continue
		}
		require.NoError(t, err, f)
		outcomes[f] = o
	}
	mix := outcomes["pkg/tests/test_mix.py"]
	require.Equal(t, counts{Passed: 2, Failed: 1, Error: 1, Skipped: 6, XFailed: 1}, mix.counts)
	require.Equal(t, [][3]string{
		{"FAILED", "pkg/tests/test_mix.py::test_fail", "call: AssertionError: one is not two"},
		{"ERROR", "pkg/tests/test_mix.py::test_setup_error", "setup: RuntimeError: the fixture broke"},
	}, mix.Problems)
	require.Equal(t, map[string]int{"by choice": 1, "no dup on WASI (capfd)": 1, "no ctypes on WASI (ctypes.Structure)": 1, "no ctypes on WASI (ctypes.c_double)": 1, "no ctypes on WASI (ctypes.c_size_t)": 1, "no mmap on WASI (mmap.mmap)": 1}, mix.Skips)
	noimport := outcomes["pkg/tests/test_noimport.py"]
	require.Equal(t, counts{Error: 1}, noimport.counts)
	require.Equal(t, [][3]string{{"ERROR", "pkg/tests/test_noimport.py", "ModuleNotFoundError: No module named 'no_such_module'"}}, noimport.Problems)
	later := outcomes["pkg/tests/test_later.py"]
	require.Equal(t, counts{Passed: 1, Skipped: 1}, later.counts)
	require.Equal(t, map[string]int{"its own guard": 1}, later.Skips)

	// Judged against a list of known failures: a failure not listed fails
	// the suite, as does a listed test that passed or was skipped; the
	// tests of a file that did not finish, or was not run, are not judged.
	expected, err := parseExpected("expected_failures.txt", `
# one is not two
pkg/tests/test_mix.py::test_fail  # AssertionError
pkg/tests/test_noimport.py  # no such module

pkg/tests/test_mix.py::test_pass  # listed, but it passes
pkg/tests/test_mix.py::test_skip  # listed, but it is skipped
pkg/tests/test_exit.py::test_exit  # its file ends the run
pkg/tests/test_left.py::test_left_out  # its file is not run
`)
	require.NoError(t, err)
	unexpected, stale := judge(expected, outcomes)
	require.Equal(t, [][3]string{{"ERROR", "pkg/tests/test_mix.py::test_setup_error", "setup: RuntimeError: the fixture broke"}}, unexpected)
	require.Equal(t, []string{"pkg/tests/test_mix.py::test_pass", "pkg/tests/test_mix.py::test_skip"}, stale)
	require.Equal(t, "1 failures and errors not in expected_failures.txt (fix them, or list them with a reason):\n"+
		"  pkg/tests/test_mix.py::test_setup_error  # ERROR setup: RuntimeError: the fixture broke\n"+
		"2 expected failures that did not fail (remove them from expected_failures.txt):\n"+
		"  pkg/tests/test_mix.py::test_pass\n  pkg/tests/test_mix.py::test_skip\n", verdict("expected_failures.txt", unexpected, stale))
	expected["pkg/tests/test_mix.py::test_setup_error"] = "the fixture broke"
	delete(expected, "pkg/tests/test_mix.py::test_pass")
	delete(expected, "pkg/tests/test_mix.py::test_skip")
	unexpected, stale = judge(expected, outcomes)
	require.Empty(t, unexpected)
	require.Empty(t, stale)

	report := sum.String(left)
	t.Log(report)
	for _, want := range []string{
		"pkg's tests in the sandbox, per directory:\n  pkg/tests                       3 files  3 passed, 1 failed, 2 errors, 7 skipped, 1 xfailed, 0 xpassed\n",
		"      1  FAILED call: AssertionError: one is not two  (test_mix.py 1)\n",
		"      1  ERROR setup: RuntimeError: the fixture broke  (test_mix.py 1)\n",
		"      1  ERROR ModuleNotFoundError: No module named 'no_such_module'  (test_noimport.py 1)\n",
		"skipped, the most frequent reasons:\n      1  by choice\n      1  its own guard\n      1  no ctypes on WASI (ctypes.Structure)\n      1  no ctypes on WASI (ctypes.c_double)\n      1  no ctypes on WASI (ctypes.c_size_t)\n      1  no dup on WASI (capfd)\n      1  no mmap on WASI (mmap.mmap)\n",
		"not run: pkg/tests/test_left.py: needs a fork\n",
		"did not finish: pkg/tests/test_exit.py\n",
	} {
		require.Contains(t, report, want)
	}
}

// pytestSandbox is the sci interpreter with pytest.lock's packages.
func pytestSandbox(t *testing.T) *wasmpy.Sandbox {
	set := pytestSet(t)
	sb, err := wasmpy.New(context.Background(), wasmpy.Config{Interpreter: assets.Sci, Packages: []string{set}})
	require.NoError(t, err, "run `make` to build the sci interpreter")
	t.Cleanup(func() { sb.Close(context.Background()) })
	return sb
}
