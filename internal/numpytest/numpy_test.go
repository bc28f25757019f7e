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

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/assets"
)

//go:embed driver.py
var driver string

// counts is the driver's last line.
type counts struct {
	Exit    int `json:"exit"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Error   int `json:"error"`
	Skipped int `json:"skipped"`
	XFailed int `json:"xfailed"`
	XPassed int `json:"xpassed"`
}

func (c counts) String() string {
	return fmt.Sprintf("%d passed, %d failed, %d errors, %d skipped, %d xfailed, %d xpassed",
		c.Passed, c.Failed, c.Error, c.Skipped, c.XFailed, c.XPassed)
}

// suites are run one sandbox run each: the test directories, and _core's
// files one by one (a trap in one ends only its run; test_multiarray alone
// needs ~1 GiB).
var dirs = []string{"numpy/lib/tests", "numpy/linalg/tests", "numpy/fft/tests", "numpy/random/tests",
	"numpy/ma/tests", "numpy/polynomial/tests", "numpy/matrixlib/tests", "numpy/tests"}

func TestNumpySuite(t *testing.T) {
	if os.Getenv("WASMPY_NUMPY_TESTS") == "" {
		t.Skip("numpy's own tests take many minutes: `make test-numpy` runs them")
	}
	tree := sourceTree(t)
	set := pytestSet(t)
	sb, err := wasmpy.New(context.Background(), wasmpy.Config{Interpreter: assets.Sci, Packages: []string{set}})
	require.NoError(t, err, "run `make` to build the sci interpreter")
	defer sb.Close(context.Background())

	suites := append([]string(nil), dirs...)
	core, err := filepath.Glob(filepath.Join(tree, "numpy/_core/tests/test_*.py"))
	require.NoError(t, err)
	for _, f := range core {
		rel, _ := filepath.Rel(tree, f)
		suites = append(suites, filepath.ToSlash(rel))
	}
	if sel := os.Getenv("WASMPY_NUMPY_TESTS"); sel != "all" {
		suites = strings.Split(sel, ",")
	}
	var total counts
	var crashed []string
	for _, s := range suites {
		start := time.Now()
		res, err := sb.Run(context.Background(), wasmpy.Job{Code: driver, Filename: "driver.py", Args: []string{s},
			Workspace: tree, Limits: wasmpy.Limits{Memory: 3 << 30, Timeout: time.Hour, Output: 64 << 20}})
		require.NoError(t, err)
		c, ok := lastCounts(res.Stdout)
		if !ok {
			why := res.Stderr
			if res.Error != nil {
				why = string(res.Error.Kind) + ": " + res.Error.Message + "\n" + tail(res.Stderr, 2000)
			}
			crashed = append(crashed, s)
			t.Logf("%-50s did not finish (%s): %s\n%s", s, time.Since(start).Round(time.Second), why, tail(res.Stdout, 3000))
			continue
		}
		t.Logf("%-50s %s (%s)", s, c, time.Since(start).Round(time.Second))
		if c.Failed+c.Error > 0 {
			t.Logf("%s", failures(res.Stdout))
		}
		total.Passed += c.Passed
		total.Failed += c.Failed
		total.Error += c.Error
		total.Skipped += c.Skipped
		total.XFailed += c.XFailed
		total.XPassed += c.XPassed
	}
	fmt.Printf("numpy's tests in the sandbox: %s over %d suites; %d suites did not finish %v\n",
		total, len(suites), len(crashed), crashed)
	require.Greater(t, total.Passed, 0)
	require.Empty(t, crashed, "a suite ended without pytest's summary")
}

// lastCounts finds the driver's JSON line.
func lastCounts(stdout string) (counts, bool) {
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var c counts
	if len(lines) == 0 || json.Unmarshal([]byte(lines[len(lines)-1]), &c) != nil {
		return c, false
	}
	return c, true
}

// failures is pytest's short summary: the FAILED and ERROR lines.
func failures(stdout string) string {
	var b strings.Builder
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "FAILED ") || strings.HasPrefix(l, "ERROR ") {
			b.WriteString("    " + l + "\n")
		}
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// sourceTree unpacks the numpy tarball the sci build is made from (checked
// against the lock) into the cache, once.
func sourceTree(t *testing.T) string {
	var lock struct {
		Inputs map[string]struct {
			File   string `json:"file"`
			SHA256 string `json:"sha256"`
		} `json:"inputs"`
	}
	b, err := os.ReadFile("../../assets/build/interpreter.lock")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &lock))
	in := lock.Inputs["numpy"]
	tarball := filepath.Join(sourcesDir(t), in.File)
	data, err := os.ReadFile(tarball)
	require.NoError(t, err, "numpy's source tarball (WASMPY_SOURCES)")
	sum := sha256.Sum256(data)
	require.Equal(t, in.SHA256, hex.EncodeToString(sum[:]), "%s differs from the lock", tarball)
	cache, err := assets.DefaultCacheDir()
	require.NoError(t, err)
	dir := filepath.Join(cache, "numpy-tests", in.SHA256[:12])
	if _, err := os.Stat(filepath.Join(dir, "numpy", "conftest.py")); err == nil {
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

// pytestSet fetches pytest.lock's packages and builds them into a set.
func pytestSet(t *testing.T) string {
	cache, err := assets.DefaultCacheDir()
	require.NoError(t, err)
	debs := filepath.Join(cache, "numpy-tests", "debs")
	lockPath, err := filepath.Abs("pytest.lock")
	require.NoError(t, err)
	cmd := exec.Command("../../assets/build/debpkgs.sh", debs, lockPath)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), "fetching pytest.lock's packages: %s", stderr.String())
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
