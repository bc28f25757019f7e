package wasmpy_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
)

var (
	numpyOnce sync.Once
	numpySB   *wasmpy.Sandbox
	numpyErr  error
)

// numpySandbox is the sci interpreter (wasmpy with numpy) that `make` builds
// beside the default one. The tests skip only where the default build could
// not be made either (no toolchain: the npm interpreter runs).
func numpySandbox(t *testing.T) *wasmpy.Sandbox {
	t.Helper()
	numpyOnce.Do(func() {
		numpySB, numpyErr = wasmpy.New(context.Background(), wasmpy.Config{Interpreter: "sci"})
	})
	if numpyErr != nil && testSandbox(t).Interpreter().Kind != "core" {
		t.Skipf("no sci interpreter on a host that cannot build: %v", numpyErr)
	}
	require.NoError(t, numpyErr, "run `make` to build the sci interpreter")
	return numpySB
}

func runNumpy(t *testing.T, job wasmpy.Job) *wasmpy.Result {
	t.Helper()
	res, err := numpySandbox(t).Run(context.Background(), job)
	require.NoError(t, err)
	return res
}

// numpy works in the sandbox: each part the sci build links in, run
// through the real interpreter, with the results native numpy gives
// (random's streams checked against Debian's numpy 1.24).
func TestNumpy(t *testing.T) {
	for _, tc := range []struct{ name, code, stdout string }{
		{"arrays and dtypes", `
import numpy as np
a = np.arange(12, dtype=np.int64).reshape(3, 4)
print(np.__version__, a.shape, a.dtype, a.sum(), a.T[1].tolist(), a[1:, ::2].tolist())
print(np.dtype(np.intp).itemsize, np.dtype(np.int_).itemsize, np.longdouble(1) / 3 > 0.333, np.float16(1.5) * 2)
s = np.array([(1, 2.5, b"x")], dtype=[("a", "i4"), ("b", "f8"), ("c", "S1")])
print(s["b"][0], s.dtype.names, np.zeros((2, 2), dtype=complex).dtype, np.array(["ab", "c"]).dtype)
`, "2.2.4 (3, 4) int64 66 [1, 5, 9] [[4, 6], [8, 10]]\n4 4 True 3.0\n2.5 ('a', 'b', 'c') complex128 <U2\n"},
		{"ufuncs", `
import numpy as np
x = np.linspace(0, 1, 5)
print(np.round(np.sin(x) ** 2 + np.cos(x) ** 2, 12).tolist(), np.exp(np.log(x[1:])).round(12).tolist())
print(np.add.reduce([1, 2, 3]), np.multiply.outer([1, 2], [3, 4]).tolist(), np.maximum.accumulate([1, 3, 2]).tolist())
print(np.einsum("ij,jk->ik", np.eye(2), [[1, 2], [3, 4]]).tolist(), np.unique([3, 1, 3, 2]).tolist(), np.sort([3, 1, 2])[::-1].tolist())
`, "[1.0, 1.0, 1.0, 1.0, 1.0] [0.25, 0.5, 0.75, 1.0]\n6 [[3, 4], [6, 8]] [1, 3, 3]\n[[1.0, 2.0], [3.0, 4.0]] [1, 2, 3] [3, 2, 1]\n"},
		{"linalg", `
import numpy as np
a = np.array([[4.0, 1.0], [2.0, 3.0]])
print(np.allclose(a @ np.linalg.inv(a), np.eye(2)), np.linalg.solve(a, [1.0, 2.0]).round(10).tolist())
u, s, vt = np.linalg.svd(a)
print(np.allclose(u @ np.diag(s) @ vt, a), sorted(np.linalg.eig(a)[0].round(10).tolist()), round(np.linalg.det(a), 10))
print(np.linalg.cholesky([[4.0, 2.0], [2.0, 3.0]]).round(6).tolist(), np.linalg.matrix_rank(np.ones((3, 3))), np.linalg.lstsq(a, [1.0, 2.0], rcond=None)[0].round(10).tolist())
`, "True [0.1, 0.6]\nTrue [2.0, 5.0] 10.0\n[[2.0, 0.0], [1.0, 1.414214]] 1 [0.1, 0.6]\n"},
		{"fft", `
import numpy as np
print(np.fft.fft([1, 0, 0, 0]).tolist(), np.fft.rfft([1.0, 2.0, 3.0, 4.0]).tolist())
x = np.random.default_rng(1).random(1000)
print(np.allclose(np.fft.ifft(np.fft.fft(x)).real, x), np.allclose(np.fft.irfft(np.fft.rfft(x, 1001), 1001)[:1000], x), np.fft.fftfreq(4).tolist())
`, "[(1+0j), (1+0j), (1+0j), (1+0j)] [(10+0j), (-2+2j), (-2+0j)]\nTrue True [0.0, 0.25, -0.5, -0.25]\n"},
		{"random", `
import numpy as np
rng = np.random.default_rng(12345)
print(rng.integers(0, 100, 5).tolist(), round(float(rng.normal()), 12), rng.permutation(5).tolist())
print([type(np.random.Generator(g(1)).bit_generator).__name__ for g in (np.random.PCG64, np.random.MT19937, np.random.Philox, np.random.SFC64)])
np.random.seed(0)
print(np.random.randint(0, 10, 5).tolist(), round(np.random.rand(), 12), np.random.multinomial(10, [0.5, 0.5]).sum(), np.random.binomial(10, 0.5, 3).tolist())
`, "[69, 22, 78, 31, 20] -0.259173234934 [4, 3, 0, 1, 2]\n['PCG64', 'MT19937', 'Philox', 'SFC64']\n[5, 0, 3, 3, 7] 0.423654799339 10 [5, 7, 8]\n"},
		{"datetime64", `
import numpy as np
d = np.arange("2024-02-27", "2024-03-02", dtype="datetime64[D]")
print(d.tolist()[-1], (d[-1] - d[0]).astype(int), np.datetime64("2024-01-01T12:00") + np.timedelta64(90, "m"), np.busday_count("2024-01-01", "2024-01-08"))
`, "2024-03-01 3 2024-01-01T13:30 5\n"},
		{"printing", `
import numpy as np
print(np.arange(6).reshape(2, 3))
print(repr(np.array([1.5, np.nan, np.inf])), np.array2string(np.eye(2), separator=", "))
with np.printoptions(precision=3):
    print(np.array([np.pi, np.e]), np.arange(2000))
`, "[[0 1 2]\n [3 4 5]]\narray([1.5, nan, inf]) [[1., 0.],\n [0., 1.]]\n[3.142 2.718] [   0    1    2 ... 1997 1998 1999]\n"},
		{"save and load, BytesIO", `
import io, numpy as np
a = np.arange(10.0).reshape(2, 5)
b = io.BytesIO(); np.save(b, a); b.seek(0)
z = io.BytesIO(); np.savez_compressed(z, a=a, b=a.T); z.seek(0)
t = io.StringIO(); np.savetxt(t, a, fmt="%d"); t.seek(0)
print(np.array_equal(np.load(b), a), np.array_equal(np.load(z)["b"], a.T), np.loadtxt(t).sum())
`, "True True 45.0\n"},
		{"save and load, workspace file", `
import os, numpy as np
a = np.arange(10.0).reshape(2, 5)
np.save("a.npy", a)
np.savez("ab.npz", a=a, b=-a)
with open("raw.npy", "wb") as f:
    np.save(f, a[::-1])
print(sorted(os.listdir(".")), np.array_equal(np.load("a.npy"), a), np.load("ab.npz")["b"].sum(), np.load("raw.npy")[0].tolist())
`, "['a.npy', 'ab.npz', 'raw.npy'] True -45.0 [5.0, 6.0, 7.0, 8.0, 9.0]\n"},
		{"ma, polynomial, testing", `
import numpy as np, numpy.testing as npt
m = np.ma.masked_array([1, 2, 3], mask=[0, 1, 0])
p = np.polynomial.Polynomial([1, 2, 3])
print(m.sum(), m.mean(), p(2), np.polyfit([0, 1, 2], [1, 3, 5], 1).round(10).tolist(), p.deriv().coef.tolist())
npt.assert_allclose([1.0, 2.0], [1.0, 2.0 + 1e-9])
try:
    npt.assert_array_equal([1, 2], [1, 3])
except AssertionError as e:
    print("AssertionError", "Mismatched elements: 1 / 2" in str(e))
`, "4 2.0 17.0 [2.0, 1.0] [2.0, 6.0]\nAssertionError True\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runNumpy(t, wasmpy.Job{Code: tc.code, Limits: wasmpy.Limits{Memory: 256 << 20}})
			require.Nil(t, res.Error, res.Stderr)
			require.Equal(t, tc.stdout, res.Stdout)
		})
	}
}

// numpy is imported before the snapshot: a run finds it in sys.modules
// and pays no fuel for importing it.
func TestNumpyPreloaded(t *testing.T) {
	res := runNumpy(t, wasmpy.Job{Code: "import sys\nprint('numpy' in sys.modules)\nimport numpy",
		Limits: wasmpy.Limits{Fuel: 1 << 40}})
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "True\n", res.Stdout)
	// Importing numpy itself takes ~160 M fuel; a run with it preloaded is
	// a few hundred thousand.
	require.Less(t, res.FuelUsed, uint64(20_000_000))
}

// A numpy workload spends the same fuel run after run.
func TestNumpyFuelDeterministic(t *testing.T) {
	code := `
import numpy as np
rng = np.random.default_rng(7)
a = rng.normal(size=(60, 60))
print(round(float(np.linalg.inv(a).sum()), 6), round(float(np.abs(np.fft.fft(a[0])).sum()), 6), np.sort(rng.random(5000))[2500] > 0)
`
	var fuel []uint64
	var out []string
	for range 3 {
		res := runNumpy(t, wasmpy.Job{Code: code, Limits: wasmpy.Limits{Fuel: 1 << 40}})
		require.Nil(t, res.Error, res.Stderr)
		fuel = append(fuel, res.FuelUsed)
		out = append(out, res.Stdout)
	}
	require.Greater(t, fuel[0], uint64(1_000_000))
	require.Equal(t, []uint64{fuel[0], fuel[0], fuel[0]}, fuel)
	require.Equal(t, []string{out[0], out[0], out[0]}, out)
}

// The sci build's wasm SIMD code (elementwise float arithmetic, sum,
// matmul, arange; assets/build/numpy/) gives the bits numpy's scalar loops
// give, for every size and layout testdata/numpy_kernels.py tries, and
// lapack_lite's vectorized BLAS solves to rounding.
func TestNumpyKernels(t *testing.T) {
	code, err := os.ReadFile("testdata/numpy_kernels.py")
	require.NoError(t, err)
	res := runNumpy(t, wasmpy.Job{Code: string(code), Limits: wasmpy.Limits{Memory: 256 << 20, Timeout: 5 * time.Minute}})
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "ok 1726\n", res.Stdout)
}

// The kernels are what runs: each operation's fuel per element (fuel is
// deterministic) is well below what numpy's scalar loops spend, which was
// 21.1 for a*b+1 (two ops), 8.9 for sum and 19.7 per multiply-add of matmul.
func TestNumpyKernelFuel(t *testing.T) {
	setup := "import numpy as np\nrng = np.random.default_rng(0)\na, b = rng.random(10**5), rng.random(10**5)\nm, m2 = rng.random((60, 60)), rng.random((60, 60))\n"
	fuel := func(code string) float64 {
		res := runNumpy(t, wasmpy.Job{Code: setup + code, Limits: wasmpy.Limits{Fuel: 1 << 40}})
		require.Nil(t, res.Error, res.Stderr)
		return float64(res.FuelUsed)
	}
	base := fuel("")
	for _, tc := range []struct {
		name, code    string
		elements, max float64
	}{
		{"a*b+1", "for _ in range(10): a * b + 1.0", 10 * 2e5, 14},
		{"sum", "for _ in range(10): a.sum()", 10 * 1e5, 6},
		{"matmul", "for _ in range(10): m @ m2", 10 * 60 * 60 * 60, 10},
	} {
		per := (fuel(tc.code) - base) / tc.elements
		t.Logf("%s: %.2f fuel per element", tc.name, per)
		require.Less(t, per, tc.max, tc.name)
	}
}

// What numpy cannot do on wasm32-wasi, as the README documents.
func TestNumpyDifferences(t *testing.T) {
	t.Run("seterr cannot trap floating-point errors", func(t *testing.T) {
		// wasm has no floating-point exception flags: numpy never sees one.
		res := runNumpy(t, wasmpy.Job{Code: `
import numpy as np, warnings
np.seterr(all="raise")
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    r = np.array([1.0, 0.0]) / np.array([0.0, 0.0])
    o = np.float64(1e308) * 10
print(r.tolist(), o, len(w), np.geterr()["divide"])
`})
		require.Nil(t, res.Error, res.Stderr)
		require.Equal(t, "[inf, nan] inf 0 raise\n", res.Stdout)
	})
	t.Run("no memmap", func(t *testing.T) {
		res := runNumpy(t, wasmpy.Job{Code: "import numpy as np\nnp.memmap('m.dat', dtype='u1', mode='w+', shape=(4,))"})
		require.NotNil(t, res.Error)
		require.Equal(t, wasmpy.KindException, res.Error.Kind)
		require.Equal(t, "ModuleNotFoundError", res.Error.Type, res.Stderr)
		require.Contains(t, res.Error.Message, "mmap")
	})
	t.Run("a C++ exception ends the run, classified", func(t *testing.T) {
		// pocketfft's plan for a large prime length (Bluestein) needs more
		// than the memory limit leaves: its allocation throws bad_alloc,
		// which cannot unwind on wasm32-wasi.
		res := runNumpy(t, wasmpy.Job{Code: "import numpy as np\nprint('before', flush=True)\nnp.fft.fft(np.ones(4), n=1_000_003)\nprint('after')",
			Limits: wasmpy.Limits{Memory: 96 << 20}})
		// The throw cannot be caught: the run ends there, classified by its
		// cause (the memory limit), and says why on stderr.
		require.NotNil(t, res.Error, res.Stdout)
		require.Equal(t, wasmpy.KindMemory, res.Error.Kind)
		require.Equal(t, "before\n", res.Stdout)
		require.Contains(t, res.Stderr, "a C++ exception was thrown inside an extension module")
		// The sandbox is unharmed: the next run works.
		res = runNumpy(t, wasmpy.Job{Code: "import numpy as np\nprint(np.fft.fft(np.ones(4)).real.tolist())"})
		require.Nil(t, res.Error, res.Stderr)
		require.Equal(t, "[4.0, 0.0, 0.0, 0.0]\n", res.Stdout)
	})
}

// A workspace file written by the host is read by numpy and one numpy
// writes comes back in the run's changes.
func TestNumpyWorkspaceFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data.csv"), []byte("1,2\n3,4\n"), 0o644))
	res := runNumpy(t, wasmpy.Job{Workspace: dir, Code: `
import numpy as np
a = np.loadtxt("data.csv", delimiter=",")
np.save("out.npy", a * 2)
print(a.sum(), np.load("out.npy").sum())
`})
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "10.0 20.0\n", res.Stdout)
	var names []string
	for _, f := range res.Files {
		names = append(names, f.Path)
	}
	require.Equal(t, "out.npy", strings.Join(names, ","))
}

// The sci build's numpy, pandas, pandas' dependencies and Pillow meet a requirement
// without a package set; the default build's do not.
func TestNumpyRequirement(t *testing.T) {
	sb := numpySandbox(t)
	require.NoError(t, sb.Require("numpy>=2.2", "numpy==2.2.4", "pandas>=2.2", "python-dateutil>=2.8.2", "pytz>=2020.1", "six"))
	require.EqualError(t, sb.Require("numpy>=3"), `wasmpy: requirement "numpy>=3": the sandbox mounts no package set, so it has only the standard library, numpy 2.2.4, pandas 2.2.3, python-dateutil 2.9.0, pytz 2025.2, six 1.17.0 and pillow 11.1.0`)
	require.EqualError(t, testSandbox(t).Require("numpy"), `wasmpy: requirement "numpy": the sandbox mounts no package set, so it has only the standard library`)
}

// BenchmarkNumpy runs testdata/bench/numpy_ops.py (each operation's best
// time) in the sci sandbox and with a native numpy in the same run, and
// reports each operation's milliseconds and the sandbox/native ratio.
func BenchmarkNumpy(b *testing.B) { benchSciOps(b, "testdata/bench/numpy_ops.py", "numpy") }

// benchSciOps runs script (it prints a JSON object of milliseconds per
// operation) in the sci sandbox and, in the same run, with a native
// python3 that has module, and reports each operation's milliseconds and
// the sandbox/native ratio.
func benchSciOps(b *testing.B, script, module string) {
	code, err := os.ReadFile(script)
	require.NoError(b, err)
	sb, err := wasmpy.New(context.Background(), wasmpy.Config{Interpreter: "sci"})
	if err != nil {
		b.Skipf("no sci interpreter: %v", err)
	}
	b.Cleanup(func() { sb.Close(context.Background()) })
	python := nativeWith(b, module)
	for b.Loop() {
		res, err := sb.Run(context.Background(), wasmpy.Job{Code: string(code), Limits: wasmpy.Limits{Memory: 512 << 20, Timeout: 10 * time.Minute}})
		require.NoError(b, err)
		require.Nil(b, res.Error, res.Stderr)
		var in, native map[string]float64
		require.NoError(b, json.Unmarshal([]byte(res.Stdout), &in))
		if python != "" {
			out, err := exec.Command(python, script).Output()
			require.NoError(b, err)
			require.NoError(b, json.Unmarshal(out, &native))
		}
		for op, ms := range in {
			b.ReportMetric(ms, op+"-ms")
			if native[op] > 0 {
				b.ReportMetric(ms/native[op], op+"-x")
			}
		}
	}
}

// nativeWith is a native python3 that can import module ("" if none): the
// one on PATH, else the system's.
func nativeWith(b *testing.B, module string) string {
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		out, err := exec.Command(p, "-c", "import sys, "+module+"; print(sys.executable)").Output()
		if err == nil {
			return strings.TrimSpace(string(out))
		}
	}
	b.Logf("no native python3 with %s: the sandbox's figures stand alone", module)
	return ""
}
