package numpytest

import (
	_ "embed"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/internal/testing/needs"
)

// pandasSuite: pandas' tests, every test file under pandas/tests, deselected
// as pandas.test() does (no slow, network or database tests), with pandas'
// own pytest configuration (its pyproject.toml: markers, xfail_strict, its
// warnings as errors).
var pandasSuite = suite{
	pkg:       "pandas",
	env:       "WASMPY_PANDAS_TESTS",
	list:      "expected_failures_pandas.txt",
	args:      []string{"-m", "not slow and not network and not db"},
	recursive: true,
	// The files a directory's run leaves out, each with why it cannot run in
	// the sandbox; naming one in WASMPY_PANDAS_TESTS still runs it.
	notRun: map[string]string{},
}

// pandasExpectedFailures are the tests of pandas known to fail in the
// sandbox, each with why.
//
//go:embed expected_failures_pandas.txt
var pandasExpectedFailures string

// TestPandasSuite runs the test files of pandas' own suite that
// WASMPY_PANDAS_TESTS selects (all: pandas/tests; or a comma-separated list
// of directories, each with its subdirectories, and files), as
// TestNumpySuite does numpy's, judged against expected_failures_pandas.txt.
func TestPandasSuite(t *testing.T) {
	sel := os.Getenv(pandasSuite.env)
	if sel == "" {
		t.Skip("pandas' own tests take hours: `make test-pandas` runs them")
	}
	if sel == "all" {
		sel = "pandas/tests"
	}
	runSuite(t, pandasSuite, pandasSourceTree(t), sel, pandasExpectedFailures)
}

// pandasSourceTree unpacks the pandas tarball the sci build is made from
// (Debian's, which build.sh keeps in its work dir's dl/; checked against
// the lock) into the cache, once.
func pandasSourceTree(t *testing.T) string {
	in := lockedInput(t, "pandas")
	work := os.Getenv("WASMPY_BUILD_DIR")
	if work == "" {
		cache, err := os.UserCacheDir()
		require.NoError(t, err)
		work = filepath.Join(cache, "wasmpy", "build")
	}
	tarball := filepath.Join(work, "dl", in.File)
	data, err := os.ReadFile(tarball)
	if os.IsNotExist(err) {
		needs.Skipf(t, "needs the sci build's work dir (run `make`; WASMPY_BUILD_DIR): no %s", tarball)
	}
	require.NoError(t, err)
	return unpackTree(t, tarball, data, in.SHA256, "pandas")
}
