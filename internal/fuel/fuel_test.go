package fuel_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/wasmpy/wasmpy/internal/fuel"
)

// testFeatures are what the test modules need: WebAssembly 2.0 and what
// features.wat uses.
const testFeatures = api.CoreFeaturesV2 | experimental.CoreFeaturesThreads |
	experimental.CoreFeaturesTailCall | experimental.CoreFeaturesExtendedConst

// readTestdata reads testdata/name; see testdata/README.md.
func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

func instrument(t testing.TB, wasm []byte) []byte {
	t.Helper()
	out, err := fuel.Instrument(wasm, nil)
	require.NoError(t, err)
	return out
}

// instance runs one module in a fresh runtime: the compiler unless interp.
type instance struct {
	t   testing.TB
	ctx context.Context
	rt  wazero.Runtime
	mod api.Module
}

func newInstance(t testing.TB, wasm []byte, interp bool) *instance {
	t.Helper()
	ctx := context.Background()
	cfg := wazero.NewRuntimeConfigCompiler()
	if interp {
		cfg = wazero.NewRuntimeConfigInterpreter()
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg.WithCoreFeatures(testFeatures))
	t.Cleanup(func() { _ = rt.Close(ctx) })
	_, err := rt.InstantiateWithConfig(ctx, readTestdata(t, "env.wasm"), wazero.NewModuleConfig().WithName("env"))
	require.NoError(t, err)
	mod, err := rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithName(""))
	require.NoError(t, err)
	return &instance{t: t, ctx: ctx, rt: rt, mod: mod}
}

func (in *instance) counter() api.MutableGlobal {
	in.t.Helper()
	g, ok := in.mod.ExportedGlobal(fuel.GlobalName).(api.MutableGlobal)
	require.True(in.t, ok, "no mutable global %q", fuel.GlobalName)
	return g
}

// fuel sets the budget.
func (in *instance) fuel(budget int64) { in.counter().Set(uint64(budget)) }

// left reads the counter.
func (in *instance) left() int64 { return int64(in.counter().Get()) }

func (in *instance) call(name string, args ...uint64) ([]uint64, error) {
	in.t.Helper()
	f := in.mod.ExportedFunction(name)
	require.NotNil(in.t, f, "no export %q", name)
	res, err := f.Call(in.ctx, args...)
	if res == nil && err == nil {
		res = []uint64{} // the engines disagree on no results
	}
	return res, err
}

// used calls name with a large budget and returns its results and the fuel
// it used.
func (in *instance) used(name string, args ...uint64) ([]uint64, int64) {
	in.t.Helper()
	const budget = 1 << 50
	in.fuel(budget)
	res, err := in.call(name, args...)
	require.NoError(in.t, err)
	return res, budget - in.left()
}

func TestExactCosts(t *testing.T) {
	wasm := instrument(t, readTestdata(t, "cost.wasm"))
	nested := func(n, m int64) int64 {
		if n == 0 {
			return 3
		}
		return 3 + n*(2+11*max(m, 1))
	}
	tests := []struct {
		name string
		args []uint64
		want []uint64
		fuel int64
	}{
		{"empty", nil, []uint64{}, 1},
		{"straight", nil, []uint64{3}, 3},
		{"blocks", nil, []uint64{6}, 5},
		{"ifelse", []uint64{0}, []uint64{2}, 2},
		{"ifelse", []uint64{1}, []uint64{30}, 2},
		{"switch", []uint64{0}, []uint64{100}, 2},
		{"switch", []uint64{1}, []uint64{200}, 2},
		{"switch", []uint64{7}, []uint64{300}, 2},
		{"early", nil, []uint64{7}, 1},
		{"call", nil, []uint64{6}, 5 + 3},
		{"count", []uint64{0}, []uint64{1}, 7},
		{"count", []uint64{1}, []uint64{1}, 7},
		{"count", []uint64{1000}, []uint64{1000}, 7000},
		{"nested", []uint64{0, 5}, []uint64{0}, nested(0, 5)},
		{"nested", []uint64{3, 0}, []uint64{3}, nested(3, 0)},
		{"nested", []uint64{7, 9}, []uint64{63}, nested(7, 9)},
		{"mvsum", []uint64{10}, []uint64{55}, 2 + 8*10},
		{"swap", []uint64{1, 2}, []uint64{2, 1}, 2},
	}
	for _, interp := range []bool{false, true} {
		in := newInstance(t, wasm, interp)
		for _, tc := range tests {
			res, used := in.used(tc.name, tc.args...)
			require.Equal(t, tc.want, res, "%s%v interp=%v", tc.name, tc.args, interp)
			require.Equal(t, tc.fuel, used, "%s%v interp=%v: fuel", tc.name, tc.args, interp)
		}
	}
}

// TestSameResults checks that every export of the test modules returns the
// same as before instrumenting, and uses the same fuel every time.
func TestSameResults(t *testing.T) {
	tests := []struct {
		module, export string
		args           [][]uint64
	}{
		{"ops.wasm", "run", [][]uint64{{0}, {1}, {10}, {1000}}},
		{"cost.wasm", "fib", [][]uint64{{0}, {1}, {10}, {20}}},
		{"cost.wasm", "nested", [][]uint64{{0, 0}, {4, 4}, {100, 100}}},
		{"features.wasm", "tail", [][]uint64{{0}, {1}, {100000}}},
		{"features.wasm", "atomics", [][]uint64{{1}, {100}}},
	}
	for _, tc := range tests {
		orig := readTestdata(t, tc.module)
		wasm := instrument(t, orig)
		for _, args := range tc.args {
			want, err := newInstance(t, orig, false).call(tc.export, args...)
			require.NoError(t, err)
			var fuels []int64
			for _, interp := range []bool{false, true, false} {
				got, used := newInstance(t, wasm, interp).used(tc.export, args...)
				require.Equal(t, want, got, "%s %s%v interp=%v", tc.module, tc.export, args, interp)
				require.Positive(t, used)
				fuels = append(fuels, used)
			}
			require.Equal(t, []int64{fuels[0], fuels[0], fuels[0]}, fuels, "%s %s%v: fuel differs between runs", tc.module, tc.export, args)
		}
	}
}

func TestOutOfFuel(t *testing.T) {
	wasm := instrument(t, readTestdata(t, "cost.wasm"))
	tests := []struct {
		export string
		args   []uint64
		budget int64
		left   int64 // the counter after the trap
	}{
		{"spin", nil, 0, -1},
		{"spin", nil, 1000, -1},               // 1 per iteration: the 1001st charge traps
		{"count", []uint64{1 << 30}, 100, -5}, // 7 per iteration: 100 - 15*7
		{"fib", []uint64{40}, 12345, -3},      // 4 per call: 12345 - 3087*4
		{"call", nil, 4, -1},                  // fewer than the 5 its entry needs
	}
	for _, tc := range tests {
		for _, interp := range []bool{false, true} {
			for range 2 {
				in := newInstance(t, wasm, interp)
				in.fuel(tc.budget)
				_, err := in.call(tc.export, tc.args...)
				require.Error(t, err, "%s with %d fuel", tc.export, tc.budget)
				require.Contains(t, err.Error(), "unreachable")
				require.Equal(t, tc.left, in.left(), "%s with %d fuel, interp=%v", tc.export, tc.budget, interp)
			}
		}
	}

	t.Run("exact budget", func(t *testing.T) {
		in := newInstance(t, wasm, false)
		in.fuel(7000) // count(1000) uses exactly 7000
		res, err := in.call("count", 1000)
		require.NoError(t, err)
		require.Equal(t, []uint64{1000}, res)
		require.Zero(t, in.left())
	})

	// A function that calls nothing is charged at its entry, not checked:
	// it runs its body, and the debt shows at the caller's next check, or
	// in the counter when the call returns.
	t.Run("no check where nothing is called", func(t *testing.T) {
		in := newInstance(t, wasm, false)
		in.fuel(2)
		res, err := in.call("straight")
		require.NoError(t, err)
		require.Equal(t, []uint64{3}, res)
		require.Equal(t, int64(-1), in.left())
		in.fuel(5) // the entry of call, then add (3) in debt
		res, err = in.call("call")
		require.NoError(t, err)
		require.Equal(t, []uint64{6}, res)
		require.Equal(t, int64(-3), in.left())
	})

	t.Run("start section traps", func(t *testing.T) {
		// The counter is 0 until the host sets it, so a start function, run
		// by instantiation, has no fuel (checked: it calls).
		m := module(section(secType, vec(funcType(nil, nil))),
			section(secFunction, vec([]byte{0}, []byte{0})),
			section(8, u32(0)), // start: function 0
			section(secCode, vec(body(nil, 0x10, 0x01, 0x0b), body(nil, 0x0b))))
		ctx := context.Background()
		rt := wazero.NewRuntime(ctx)
		defer rt.Close(ctx)
		_, err := rt.Instantiate(ctx, m)
		require.NoError(t, err)
		_, err = rt.Instantiate(ctx, instrument(t, m))
		require.ErrorContains(t, err, "unreachable")
	})

	t.Run("starts empty", func(t *testing.T) {
		in := newInstance(t, wasm, false)
		require.Zero(t, in.left())
		_, err := in.call("call")
		require.Error(t, err)
	})
}

// TestCompiles checks that the instrumented test modules compile under both
// of wazero's engines: SIMD, 0xFC, br_table, call_indirect, typed select,
// multi-value blocks, nested loops, atomics and tail calls included.
func TestCompiles(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"ops.wasm", "cost.wasm", "features.wasm", "env.wasm"} {
		wasm := instrument(t, readTestdata(t, name))
		for _, cfg := range []wazero.RuntimeConfig{wazero.NewRuntimeConfigCompiler(), wazero.NewRuntimeConfigInterpreter()} {
			rt := wazero.NewRuntimeWithConfig(ctx, cfg.WithCoreFeatures(testFeatures))
			_, err := rt.CompileModule(ctx, wasm)
			require.NoError(t, err, name)
			require.NoError(t, rt.Close(ctx))
		}
		if name != "env.wasm" {
			require.Equal(t, api.ValueTypeI64, newInstance(t, wasm, false).counter().Type())
		}
	}
}

// TestFuelGlobalIndex checks the new global's index with imported and
// defined globals and with none: instrumented code must update the counter,
// not another global.
func TestFuelGlobalIndex(t *testing.T) {
	// ops.wasm imports one global and defines one: the counter is global 2,
	// and run's results depend on both others.
	in := newInstance(t, instrument(t, readTestdata(t, "ops.wasm")), false)
	_, used := in.used("run", 3)
	require.Positive(t, used)

	// A module without globals or imports, nor an export but f.
	m := module(section(secType, vec(funcType(nil, nil))),
		section(secFunction, vec([]byte{0})),
		section(secExport, vec(cat(name("f"), []byte{0x00, 0x00}))),
		section(secCode, vec(body(nil, 0x01, 0x0b))))
	in = newInstance(t, instrument(t, m), false)
	in.fuel(10)
	_, err := in.mod.ExportedFunction("f").Call(in.ctx)
	require.NoError(t, err)
	require.Equal(t, int64(9), in.left())
}

func TestCustomSectionsDropped(t *testing.T) {
	m := module(
		section(secCustom, name("name"), []byte{1, 2, 3}),
		section(secType, vec(funcType(nil, nil))),
		section(secCustom, name("producers")),
		section(secFunction, vec([]byte{0})),
		section(secCode, vec(body(nil, 0x0b))),
		section(secCustom, name(".debug_info"), []byte{4}),
	)
	out := instrument(t, m)
	require.NotContains(t, string(out), "producers")
	require.NotContains(t, string(out), "debug_info")
	require.False(t, strings.Contains(string(out), "name\x01\x02\x03"))
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	_, err := rt.CompileModule(ctx, out)
	require.NoError(t, err)
}

func TestInputUnchanged(t *testing.T) {
	orig := readTestdata(t, "ops.wasm")
	cp := append([]byte(nil), orig...)
	_ = instrument(t, cp)
	require.Equal(t, orig, cp)
}

func TestDeterministicOutput(t *testing.T) {
	orig := readTestdata(t, "ops.wasm")
	require.Equal(t, instrument(t, orig), instrument(t, orig))
}

// slicer hands a budget out in slices, as a host with a refuel function does.
type slicer struct {
	counter                     api.MutableGlobal
	budget, slice, spent, given int64
	calls                       int
}

var errSpent = errors.New("budget spent")

func (s *slicer) give() {
	s.given = min(s.slice, s.budget-s.spent)
	s.counter.Set(uint64(s.given))
}

// settle adds what the counter shows spent since the last slice.
func (s *slicer) settle() {
	left := int64(s.counter.Get())
	s.spent += s.given - left
	s.given = left
}

func (s *slicer) refuel(_ context.Context, _ api.Module, stack []uint64) {
	s.calls++
	s.settle()
	if s.spent > s.budget {
		panic(errSpent)
	}
	s.give()
	stack[0] = 0
}

// TestRefuel checks that a budget handed out in slices through the refuel
// function stops the module at the same point, with the same fuel spent, as
// the whole budget set at once.
func TestRefuel(t *testing.T) {
	orig := readTestdata(t, "refuel.wasm")
	trapping := instrument(t, orig)
	refuelling, err := fuel.Instrument(orig, &fuel.Refuel{Module: "host", Name: "refuel"})
	require.NoError(t, err)

	// run calls repeat(20, 100) (about 14,000 units) with budget, in slices
	// when slice > 0, and returns the fuel spent and whether it ran out.
	run := func(wasm []byte, budget, slice int64) (int64, bool, int) {
		ctx := context.Background()
		rt := wazero.NewRuntime(ctx)
		defer rt.Close(ctx)
		s := &slicer{budget: budget, slice: slice}
		_, err := rt.NewHostModuleBuilder("host").NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(s.refuel), []api.ValueType{api.ValueTypeI32, api.ValueTypeI64}, []api.ValueType{api.ValueTypeI32}).
			Export("refuel").Instantiate(ctx)
		require.NoError(t, err)
		mod, err := rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithName(""))
		require.NoError(t, err)
		s.counter = mod.ExportedGlobal(fuel.GlobalName).(api.MutableGlobal)
		if slice == 0 {
			s.slice = budget
		}
		s.give()
		_, err = mod.ExportedFunction("repeat").Call(ctx, 20, 100)
		s.settle()
		if slice == 0 && err != nil {
			require.ErrorContains(t, err, "unreachable")
		} else if err != nil {
			require.ErrorIs(t, err, errSpent)
		}
		return s.spent, err != nil, s.calls
	}

	for _, budget := range []int64{0, 1, 999, 5000, 1 << 40} {
		wantSpent, wantOut, _ := run(trapping, budget, 0)
		require.Equal(t, budget < 1<<40, wantOut, "budget %d", budget)
		for _, slice := range []int64{1, 7, 1000} {
			spent, out, calls := run(refuelling, budget, slice)
			require.Equal(t, wantOut, out, "budget %d in slices of %d", budget, slice)
			require.Equal(t, wantSpent, spent, "budget %d in slices of %d", budget, slice)
			if min(spent, budget) > 2*slice {
				require.Greater(t, calls, 1, "budget %d in slices of %d", budget, slice)
			}
		}
	}

	t.Run("refuel import checked", func(t *testing.T) {
		_, err := fuel.Instrument(orig, &fuel.Refuel{Module: "host", Name: "missing"})
		require.ErrorContains(t, err, "imports no function host.missing")
		_, err = fuel.Instrument(readTestdata(t, "ops.wasm"), &fuel.Refuel{Module: "env", Name: "g0"})
		require.ErrorContains(t, err, "imports no function env.g0") // a global, not a function
	})
}
