package engine

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/assets"
)

// Engines over the installed interpreter (WASMPY_INTERPRETER selects another),
// metered and not, shared by the tests and benchmarks of this package.
var engines sync.Map // engineKey -> *Engine

type engineKey struct {
	name    string
	metered bool
}

// testEngine is the wazero engine.
func testEngine(t testing.TB, metered bool) *Engine { return testEngineOn(t, Wazero, metered) }

func testEngineOn(t testing.TB, name string, metered bool) *Engine {
	t.Helper()
	key := engineKey{name, metered}
	if e, ok := engines.Load(key); ok {
		return e.(*Engine)
	}
	interp, err := assets.Load(assets.Options{Select: os.Getenv("WASMPY_INTERPRETER")})
	require.NoError(t, err, "run `make` first to install the interpreter")
	cache, err := assets.DefaultCacheDir()
	require.NoError(t, err)
	e, err := New(context.Background(), Config{Interpreter: interp, CacheDir: filepath.Join(cache, "engine"), Unmetered: !metered, Engine: name})
	require.NoError(t, err)
	actual, _ := engines.LoadOrStore(key, e)
	return actual.(*Engine)
}

// eachEngine runs test on a metered engine of every kind this test binary
// has (`go test -tags wasmtime` adds wasmtime to wazero): the conformance
// suite both engines pass.
func eachEngine(t *testing.T, test func(t *testing.T, e *Engine)) {
	for _, name := range Engines() {
		t.Run(name, func(t *testing.T) { test(t, testEngineOn(t, name, true)) })
	}
}

func runOn(t testing.TB, e *Engine, r *Run) *Outcome {
	t.Helper()
	out, err := e.Run(context.Background(), r)
	require.NoError(t, err)
	return out
}

const countdown = `
i = 0
while True:
    i += 1
    if i % 1000 == 0:
        print(i, flush=True)
`

func TestFuelExhaustion(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *Engine) {
		out := runOn(t, e, &Run{Code: countdown, Fuel: 20_000_000, Deterministic: true})
		require.NotNil(t, out.Failure)
		require.Equal(t, KindFuel, out.Failure.Kind)
		require.Equal(t, 123, out.ExitCode)
		require.Equal(t, uint64(20_000_000), out.FuelUsed)
		require.NotEmpty(t, out.Stdout)

		// The same program stops at the same point, every time.
		again := runOn(t, e, &Run{Code: countdown, Fuel: 20_000_000, Deterministic: true})
		require.Equal(t, string(out.Stdout), string(again.Stdout))
	})
}

func TestFuelDeterministic(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *Engine) {
		code, err := os.ReadFile("../../testdata/bench/cpu.py")
		require.NoError(t, err)
		run := &Run{Code: string(code) + "\nimport time, random\nprint(time.time(), random.random())\n", Fuel: 1 << 40, Deterministic: true}
		first := runOn(t, e, run)
		require.Nil(t, first.Failure, string(first.Stderr))
		require.NotZero(t, first.FuelUsed)

		// Load both cores with another process while the same job runs again.
		busy := exec.Command("sh", "-c", "while :; do :; done")
		require.NoError(t, busy.Start())
		defer busy.Process.Kill()
		busy2 := exec.Command("sh", "-c", "while :; do :; done")
		require.NoError(t, busy2.Start())
		defer busy2.Process.Kill()
		for range 2 {
			again := runOn(t, e, run)
			require.Equal(t, first.FuelUsed, again.FuelUsed)
			require.Equal(t, string(first.Stdout), string(again.Stdout))
		}
		t.Logf("cpu.py: %d fuel units", first.FuelUsed)
	})
}

func TestFuelSameOutputAsUnmetered(t *testing.T) {
	code, err := os.ReadFile("../../testdata/bench/cpu.py")
	require.NoError(t, err)
	for _, name := range Engines() {
		t.Run(name, func(t *testing.T) {
			run := &Run{Code: string(code), Fuel: 1 << 40, Deterministic: true}
			metered := runOn(t, testEngineOn(t, name, true), run)
			run.Fuel = 0
			plain := runOn(t, testEngineOn(t, name, false), run)
			require.Nil(t, metered.Failure)
			require.Equal(t, string(plain.Stdout), string(metered.Stdout))
			require.Equal(t, string(plain.Stderr), string(metered.Stderr))
			require.Zero(t, plain.FuelUsed)

			_, err = testEngineOn(t, name, false).Run(context.Background(), &Run{Code: "pass", Fuel: 10})
			require.ErrorContains(t, err, "metered engine")

			// Without fuel, a deadline still stops compute (wazero: its
			// context checks; wasmtime: the checked form's stop flag).
			out := runOn(t, testEngineOn(t, name, false), &Run{Code: "while True: pass", Timeout: 200 * time.Millisecond})
			require.Equal(t, KindTimeout, out.Failure.Kind)
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			out, err = testEngineOn(t, name, false).Run(ctx, &Run{Code: "while True: pass"})
			require.NoError(t, err)
			require.Equal(t, KindInterrupted, out.Failure.Kind)
		})
	}
}

// The guest cannot catch running out, nor reach the counter to refill it.
func TestFuelCannotBeEvaded(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *Engine) {
		out := runOn(t, e, &Run{Fuel: 5_000_000, Code: `
import sys, gc
for attempt in range(1000):
    try:
        while True:
            pass
    except BaseException as e:
        print("caught", type(e).__name__)
print("escaped")
`})
		require.Equal(t, KindFuel, out.Failure.Kind)
		require.Empty(t, out.Stdout)

		// A limit is the run's own. Under wazero every run counts fuel;
		// under wasmtime a run without a budget runs the interpreter as
		// built (faster), and counts none.
		small := runOn(t, e, &Run{Code: "print(sum(range(1000)))"})
		require.Nil(t, small.Failure)
		if e.Name() == Wasmtime {
			require.Zero(t, small.FuelUsed)
			small = runOn(t, e, &Run{Code: "print(sum(range(1000)))", Fuel: 1 << 40})
			require.Nil(t, small.Failure)
		}
		require.NotZero(t, small.FuelUsed)
		require.Less(t, small.FuelUsed, uint64(50_000_000))
	})
}

func TestFuelLoopScale(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *Engine) {
		base := runOn(t, e, &Run{Code: "s = 0\n", Deterministic: true, Fuel: 1 << 40})
		loop := runOn(t, e, &Run{Code: "s = 0\nfor i in range(1_000_000):\n    s += i\n", Deterministic: true, Fuel: 1 << 40})
		print1 := runOn(t, e, &Run{Code: "print(1)\n", Deterministic: true, Fuel: 1 << 40})
		t.Logf("print(1): %d units; 10^6-iteration loop: %d units", print1.FuelUsed, loop.FuelUsed-base.FuelUsed)
		require.Greater(t, loop.FuelUsed-base.FuelUsed, uint64(100_000_000))
	})
}

// BenchmarkMetering runs the CPU benchmark on the same interpreter metered
// and unmetered, alternating within one run.
func BenchmarkMetering(b *testing.B) {
	code, err := os.ReadFile("../../testdata/bench/cpu.py")
	require.NoError(b, err)
	for _, metered := range []bool{false, true} {
		name := map[bool]string{false: "unmetered", true: "metered"}[metered]
		b.Run(name, func(b *testing.B) {
			e := testEngine(b, metered)
			runtime.GC()
			for b.Loop() {
				out := runOn(b, e, &Run{Code: string(code)})
				require.Nil(b, out.Failure)
			}
		})
	}
}
