package wasmpy_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/assets"
	"github.com/wasmpy/wasmpy/internal/testing/needs"
	"github.com/wasmpy/wasmpy/packages"
)

// The Debian packages pinned in assets/build/packages.lock, as `make
// packages` unpacks them (WASMPY_DEBS says where; default: the cache dir).
func debianInputs(t testing.TB) []string {
	t.Helper()
	raw, err := os.ReadFile("assets/build/packages.lock")
	require.NoError(t, err)
	var lock struct {
		Packages map[string]struct{ Version string } `json:"packages"`
	}
	require.NoError(t, json.Unmarshal(raw, &lock))
	dir := os.Getenv("WASMPY_DEBS")
	if dir == "" {
		cache, err := assets.DefaultCacheDir()
		require.NoError(t, err)
		dir = filepath.Join(cache, "debs")
	}
	var inputs []string
	for name, p := range lock.Packages {
		in := filepath.Join(dir, name+"_"+p.Version)
		if _, err := os.Stat(in); err != nil {
			needs.Skipf(t, "%s is missing: run `make packages`", in)
		}
		inputs = append(inputs, in)
	}
	sort.Strings(inputs)
	return inputs
}

var (
	sciOnce sync.Once
	sciPath string
	sciErr  error
)

// sciSet builds sympy, mpmath, networkx, dateutil and six into a set with
// the test sandbox, once per process. Compiling them takes minutes, so the
// set is kept in the cache dir under a key of everything it is made of:
// the lock, the interpreter, the builder's version of the format.
func sciSet(t testing.TB) string {
	t.Helper()
	inputs := debianInputs(t)
	sb := testSandbox(t)
	sciOnce.Do(func() {
		lock, err := os.ReadFile("assets/build/packages.lock")
		if err != nil {
			sciErr = err
			return
		}
		key := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%s", lock, sb.Interpreter().SHA256, packages.Format))
		cache, err := assets.DefaultCacheDir()
		if err != nil {
			sciErr = err
			return
		}
		sciPath = filepath.Join(cache, "test-sets", fmt.Sprintf("sci-%x.zip", key[:8]))
		if _, err := packages.Open(sciPath); err == nil {
			return
		}
		set, _, err := packages.Build(context.Background(), packages.BuildOptions{Inputs: inputs, Python: compileIn(sb)})
		if err != nil {
			sciErr = err
			return
		}
		if err = os.MkdirAll(filepath.Dir(sciPath), 0o755); err == nil {
			err = os.WriteFile(sciPath, set, 0o644)
		}
		sciErr = err
	})
	require.NoError(t, sciErr)
	return sciPath
}

func compileIn(sb *wasmpy.Sandbox) func(context.Context, string, []byte) ([]byte, error) {
	return func(ctx context.Context, code string, stdin []byte) ([]byte, error) {
		res, err := sb.Run(ctx, wasmpy.Job{Code: code, Stdin: bytes.NewReader(stdin), Limits: wasmpy.Limits{Timeout: 10 * time.Minute, Memory: 1 << 30, Output: 256 << 20}})
		if err != nil {
			return nil, err
		}
		if err := res.Err(); err != nil {
			return nil, errors.New(res.Stderr)
		}
		return []byte(res.Stdout), nil
	}
}

func packagesSandbox(t testing.TB, cfg wasmpy.Config) *wasmpy.Sandbox {
	t.Helper()
	cfg.Interpreter = os.Getenv("WASMPY_INTERPRETER")
	sb, err := wasmpy.New(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { sb.Close(context.Background()) })
	return sb
}

const sciScript = `import sympy, dateutil.parser, importlib.metadata as md
x = sympy.symbols("x")
print(sympy.solve(x**2 - 4))
print(dateutil.parser.parse("2024-03-01T12:30:00+02:00").isoformat())
print([md.version(d) for d in ("sympy", "mpmath", "networkx", "python-dateutil", "six")])
`

const networkxScript = `import networkx as nx
g = nx.Graph([("a", "b"), ("b", "c"), ("a", "d"), ("d", "c"), ("c", "e")])
print(nx.shortest_path(g, "a", "e"))
`

// Real packages from Debian, built into one set and imported in the sandbox.
func TestDebianPackages(t *testing.T) {
	set := sciSet(t)
	sb := packagesSandbox(t, wasmpy.Config{Packages: []string{set}})
	run := func(code string) *wasmpy.Result {
		res, err := sb.Run(context.Background(), wasmpy.Job{Code: code, Limits: wasmpy.Limits{Timeout: 2 * time.Minute}})
		require.NoError(t, err)
		return res
	}
	res := run(sciScript)
	require.NoError(t, res.Err(), res.Stderr)
	require.Equal(t, "[-2, 2]\n2024-03-01T12:30:00+02:00\n"+
		"['1.11.1', '1.3.0', '3.2.1', '2.9.0', '1.17.0']\n", res.Stdout)

	data, err := os.ReadFile(set)
	require.NoError(t, err)
	require.Len(t, res.Packages, 1)
	require.Equal(t, fmt.Sprintf("%x", sha256.Sum256(data)), res.Packages[0].SHA256)
	require.Contains(t, res.Packages[0].Distributions, "networkx 3.2.1")

	// networkx imports bz2 when it is imported; an interpreter built
	// without _bz2 refuses it, and nothing else may go wrong.
	res = run(networkxScript)
	if probe := run("import _bz2"); probe.Err() != nil {
		require.Equal(t, "ModuleNotFoundError", res.Error.Type, res.Stderr)
		require.Equal(t, "No module named '_bz2'", res.Error.Message)
		require.Contains(t, res.Error.Traceback, "networkx/utils/decorators.py")
		t.Log("networkx needs _bz2, which this interpreter lacks")
		return
	}
	require.NoError(t, res.Err(), res.Stderr)
	require.Equal(t, "['a', 'b', 'c', 'e']\n", res.Stdout)
}

// A preloaded sympy costs a run nothing to import: the fuel, which counts
// the same on any machine, says so.
func TestPreload(t *testing.T) {
	set := sciSet(t)
	job := wasmpy.Job{Code: "import sympy\nprint(sympy.sqrt(8))", Limits: wasmpy.Limits{Timeout: 2 * time.Minute, Fuel: 1 << 40}}
	cold := packagesSandbox(t, wasmpy.Config{Packages: []string{set}})
	warm := packagesSandbox(t, wasmpy.Config{Packages: []string{set}, Preload: []string{"sympy"}})
	resCold, err := cold.Run(context.Background(), job)
	require.NoError(t, err)
	require.NoError(t, resCold.Err(), resCold.Stderr)
	resWarm, err := warm.Run(context.Background(), job)
	require.NoError(t, err)
	require.NoError(t, resWarm.Err(), resWarm.Stderr)
	require.Equal(t, "2*sqrt(2)\n", resCold.Stdout)
	require.Equal(t, resCold.Stdout, resWarm.Stdout)
	require.Less(t, resWarm.FuelUsed*20, resCold.FuelUsed, "cold %d, preloaded %d", resCold.FuelUsed, resWarm.FuelUsed)
}

// BenchmarkImportSympy is `import sympy` per run, with sympy in a package
// set, cold (every run imports it) and preloaded (the snapshot holds it).
func BenchmarkImportSympy(b *testing.B) {
	set := sciSet(b)
	job := wasmpy.Job{Code: "import sympy\nprint(sympy.Integer(6) * 7)", Limits: wasmpy.Limits{Timeout: 2 * time.Minute}}
	for _, kind := range []string{"cold", "preloaded"} {
		b.Run(kind, func(b *testing.B) {
			cfg := wasmpy.Config{Packages: []string{set}}
			if kind == "preloaded" {
				cfg.Preload = []string{"sympy"}
			}
			sb := packagesSandbox(b, cfg)
			var times []time.Duration
			for b.Loop() {
				start := time.Now()
				res, err := sb.Run(context.Background(), job)
				times = append(times, time.Since(start))
				require.NoError(b, err)
				require.Equal(b, "42\n", res.Stdout, res.Stderr)
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2])/1e6, "p50-ms")
		})
	}
}
