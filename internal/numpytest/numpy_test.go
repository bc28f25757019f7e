package numpytest

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/assets"
	"github.com/wasmpy/wasmpy/internal/testing/needs"
)

// numpySuite: numpy's tests, its packages' tests directories in turn.
var numpySuite = suite{
	pkg:  "numpy",
	env:  "WASMPY_NUMPY_TESTS",
	list: "expected_failures.txt",
	dirs: []string{"numpy/lib/tests", "numpy/linalg/tests", "numpy/fft/tests", "numpy/random/tests",
		"numpy/ma/tests", "numpy/polynomial/tests", "numpy/matrixlib/tests", "numpy/tests", "numpy/_core/tests"},
	// The files a directory's run leaves out, each with why it cannot run in
	// the sandbox; naming one in WASMPY_NUMPY_TESTS still runs it.
	notRun: map[string]string{
		"numpy/_core/tests/test_memmap.py":      "every test maps a file with np.memmap, and WASI has no mmap",
		"numpy/_core/tests/test_simd.py":        "numpy._core._simd (the test module of numpy's SIMD intrinsics) is not linked into the sci build",
		"numpy/_core/tests/test_simd_module.py": "numpy._core._simd (the test module of numpy's SIMD intrinsics) is not linked into the sci build",
	},
}

// expectedFailures are the tests known to fail in the sandbox, each with why.
//
//go:embed expected_failures.txt
var expectedFailures string

// TestNumpySuite runs the test files WASMPY_NUMPY_TESTS selects (all, or a
// comma-separated list of directories and files; a directory is its
// test_*.py files), each in a run of its own, and prints each file's counts
// and problems as it ends, then the totals per directory and the problems
// grouped by reason. It fails on a failure or error that
// expected_failures.txt does not list, and on a listed test of a file that
// ran to its end without failing (so the list cannot rot).
func TestNumpySuite(t *testing.T) {
	sel := os.Getenv(numpySuite.env)
	if sel == "" {
		t.Skip("numpy's own tests take many minutes: `make test-numpy` runs them")
	}
	if sel == "all" {
		sel = strings.Join(numpySuite.dirs, ",")
	}
	runSuite(t, numpySuite, sourceTree(t), sel, expectedFailures)
}

// runSuite runs the test files sel selects (directories and files of tree,
// comma-separated) as TestNumpySuite says, judged against the expected
// failures' text.
func runSuite(t *testing.T, s suite, tree, sel, expectedText string) {
	files, left, err := s.testFiles(tree, strings.Split(sel, ","))
	require.NoError(t, err)
	expected, err := parseExpected(s.list, expectedText)
	require.NoError(t, err)
	sb := pytestSandbox(t)

	sum := tally{name: s.pkg}
	finished := map[string]outcome{}
	for _, f := range files {
		start := time.Now()
		o, err := s.runFile(context.Background(), sb, tree, f)
		sum.add(f, o, err)
		if err == nil {
			finished[f] = o
		}
		t.Log(fileReport(f, o, err, time.Since(start)))
	}
	fmt.Print(sum.String(left))
	unexpected, stale := judge(expected, finished)
	fmt.Print(verdict(s.list, unexpected, stale))
	require.Greater(t, sum.total().Passed, 0)
	require.Empty(t, sum.crashed, "test files ended without pytest's summary")
	require.Empty(t, unexpected, "failures not in %s: fix them, or list them there with a reason", s.list)
	require.Empty(t, stale, "expected failures that did not fail: remove them from %s", s.list)
}

// sourceTree unpacks the numpy tarball the sci build is made from (checked
// against the lock) into the cache, once.
func sourceTree(t *testing.T) string {
	in := lockedInput(t, "numpy")
	tarball := filepath.Join(sourcesDir(t), in.File)
	data, err := os.ReadFile(tarball)
	require.NoError(t, err, "numpy's source tarball (WASMPY_SOURCES)")
	return unpackTree(t, tarball, data, in.SHA256, "numpy")
}

// lockedInput is the interpreter lock's entry for the build input name:
// its file and SHA-256.
func lockedInput(t *testing.T, name string) (in struct{ File, SHA256 string }) {
	t.Helper()
	var lock struct {
		Inputs map[string]struct {
			File   string `json:"file"`
			SHA256 string `json:"sha256"`
		} `json:"inputs"`
	}
	b, err := os.ReadFile("../../assets/build/interpreter.lock")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &lock))
	e := lock.Inputs[name]
	require.NotEmpty(t, e.File, "interpreter.lock pins no %s", name)
	in.File, in.SHA256 = e.File, e.SHA256
	return in
}

// unpackTree checks a package's source tarball (its bytes, data) against
// the lock's SHA-256 and unpacks it once into the user cache
// (<pkg>-tests/<sha prefix>), returning that directory.
func unpackTree(t *testing.T, tarball string, data []byte, sha, pkg string) string {
	t.Helper()
	sum := sha256.Sum256(data)
	require.Equal(t, sha, hex.EncodeToString(sum[:]), "%s differs from the lock", tarball)
	cache, err := assets.DefaultCacheDir()
	require.NoError(t, err)
	dir := filepath.Join(cache, pkg+"-tests", sha[:12])
	if _, err := os.Stat(filepath.Join(dir, pkg, "conftest.py")); err == nil {
		return dir
	}
	tmp := dir + ".tmp"
	require.NoError(t, os.RemoveAll(tmp))
	require.NoError(t, os.MkdirAll(tmp, 0o755))
	out, err := exec.Command("tar", "-xJf", tarball, "-C", tmp, "--strip-components=1").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.Rename(tmp, dir))
	return dir
}

// sourcesDir is where build.sh takes numpy's tarball from: WASMPY_SOURCES,
// else ../shared/sources beside the checkout (the main one, for a git
// worktree).
func sourcesDir(t *testing.T) string {
	if dir := os.Getenv("WASMPY_SOURCES"); dir != "" {
		return dir
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	if out, err := exec.Command("git", "-C", root, "rev-parse", "--path-format=absolute", "--git-common-dir").Output(); err == nil {
		root = filepath.Dir(strings.TrimSpace(string(out)))
	}
	return filepath.Join(filepath.Dir(root), "shared", "sources")
}

// pytestSet fetches pytest.lock's packages and builds them into a set; it
// skips where this machine cannot fetch them (debpkgs.sh exits 3).
func pytestSet(t *testing.T) string {
	cache, err := assets.DefaultCacheDir()
	require.NoError(t, err)
	debs := filepath.Join(cache, "numpy-tests", "debs")
	lockPath, err := filepath.Abs("pytest.lock")
	require.NoError(t, err)
	cmd := exec.Command("../../assets/build/debpkgs.sh", debs, lockPath)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if e, ok := err.(*exec.ExitError); ok && e.ExitCode() == 3 {
			needs.Skipf(t, "this machine cannot fetch pytest.lock's packages: %s", stderr.String())
		}
		require.NoError(t, err, "fetching pytest.lock's packages: %s", stderr.String())
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	b, err := os.ReadFile("pytest.lock")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &lock))
	var inputs []string
	for name, p := range lock.Packages {
		inputs = append(inputs, filepath.Join(debs, name+"_"+p.Version))
	}
	sort.Strings(inputs)
	key := sha256.Sum256(append(b, []byte(strings.Join(inputs, "\x00"))...))
	set := filepath.Join(cache, "numpy-tests", "pytest-"+hex.EncodeToString(key[:6])+".zip")
	if _, err := os.Stat(set); err == nil {
		return set
	}
	bin, err := filepath.Abs("../../bin/wasmpy")
	require.NoError(t, err)
	args := append([]string{"pkg", "build", "--interpreter", assets.Sci, "--out", set}, inputs...)
	out, err := exec.Command(bin, args...).CombinedOutput()
	require.NoError(t, err, "wasmpy pkg build: %s", out)
	return set
}
