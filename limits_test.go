package wasmpy_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
)

// TestLimitsWithin: the lower value field by field, where a field that sets
// no bound loses to one that does; never a raise, never a gap filled.
func TestLimitsWithin(t *testing.T) {
	const mib = 1 << 20
	sandbox := wasmpy.Limits{Timeout: 10 * time.Second, Memory: 64 * mib, Output: mib, Fuel: 1_000_000_000}
	for _, tc := range []struct {
		name    string
		l, ceil wasmpy.Limits
		want    wasmpy.Limits
	}{
		{"nothing asked: the ceiling", wasmpy.Limits{}, sandbox, sandbox},
		{"no ceiling: what was asked", sandbox, wasmpy.Limits{}, sandbox},
		{"neither: nothing set", wasmpy.Limits{}, wasmpy.Limits{}, wasmpy.Limits{}},
		// #25 item 3: a skill declaring 200 MiB under tier sandbox gets 64 MiB.
		{"more memory than the ceiling", wasmpy.Limits{Memory: 200 * mib}, sandbox, sandbox},
		{"less of everything: kept", wasmpy.Limits{Timeout: time.Second, Memory: mib, Output: 1024, Fuel: 10},
			sandbox, wasmpy.Limits{Timeout: time.Second, Memory: mib, Output: 1024, Fuel: 10}},
		{"field by field", wasmpy.Limits{Timeout: time.Minute, Memory: mib}, sandbox,
			wasmpy.Limits{Timeout: 10 * time.Second, Memory: mib, Output: mib, Fuel: 1_000_000_000}},
		{"no output limit asked: the ceiling's", wasmpy.Limits{Output: wasmpy.NoOutputLimit}, wasmpy.Limits{Output: mib}, wasmpy.Limits{Output: mib}},
		{"no output limit as ceiling: none set", wasmpy.Limits{Output: 2 * mib}, wasmpy.Limits{Output: wasmpy.NoOutputLimit}, wasmpy.Limits{Output: 2 * mib}},
		{"default output vs no output ceiling: the default stays", wasmpy.Limits{}, wasmpy.Limits{Output: wasmpy.NoOutputLimit}, wasmpy.Limits{}},
		{"unmetered asked, metered ceiling", wasmpy.Limits{Fuel: 0}, wasmpy.Limits{Fuel: 5}, wasmpy.Limits{Fuel: 5}},
		{"metered asked, unmetered ceiling", wasmpy.Limits{Fuel: 5}, wasmpy.Limits{}, wasmpy.Limits{Fuel: 5}},
		{"the most there is, within a small ceiling", wasmpy.Limits{Timeout: 1<<63 - 1, Memory: wasmpy.MaxMemory, Fuel: wasmpy.MaxFuel, Output: 1 << 30},
			sandbox, sandbox},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.l.Within(tc.ceil))
		})
	}
}

// TestLimitsAlgebra checks the laws on a grid of values: Within never raises
// a bound either side sets, always yields one side's value, is idempotent
// and associative; Or only fills zero fields.
func TestLimitsAlgebra(t *testing.T) {
	durations := []time.Duration{0, 1, time.Second, time.Hour}
	sizes := []uint64{0, 1, 64 << 20, wasmpy.MaxMemory}
	outputs := []int{wasmpy.NoOutputLimit, 0, 1, 4 << 20}
	var grid []wasmpy.Limits
	for i := range 4 {
		for j := range 4 {
			grid = append(grid, wasmpy.Limits{Timeout: durations[i], Memory: sizes[j], Output: outputs[(i+j)%4], Fuel: sizes[(3*i+j)%4]})
		}
	}
	type field struct {
		name string
		get  func(wasmpy.Limits) int64
	}
	fields := []field{
		{"timeout", func(l wasmpy.Limits) int64 { return int64(l.Timeout) }},
		{"memory", func(l wasmpy.Limits) int64 { return int64(l.Memory) }},
		{"output", func(l wasmpy.Limits) int64 { return int64(l.Output) }},
		{"fuel", func(l wasmpy.Limits) int64 { return int64(l.Fuel) }},
	}
	for _, a := range grid {
		for _, b := range grid {
			w := a.Within(b)
			for _, f := range fields {
				av, bv, wv := f.get(a), f.get(b), f.get(w)
				require.True(t, wv == av || wv == bv, "%s: %v within %v gave %d, neither's", f.name, a, b, wv)
				if bv > 0 {
					require.True(t, wv > 0 && wv <= bv, "%s: %v within %v gave %d, above the ceiling", f.name, a, b, wv)
				}
				if av > 0 {
					require.True(t, wv > 0 && wv <= av, "%s: %v within %v gave %d, a raise", f.name, a, b, wv)
				}
			}
			require.Equal(t, w, w.Within(b), "idempotent")
			require.Equal(t, w, w.Within(w), "idempotent")
			o := a.Or(b)
			for _, f := range fields {
				if f.get(a) != 0 {
					require.Equal(t, f.get(a), f.get(o), "%s: Or changed a set field", f.name)
				} else {
					require.Equal(t, f.get(b), f.get(o), "%s: Or did not fill", f.name)
				}
			}
			for _, c := range grid {
				require.Equal(t, a.Within(b).Within(c), a.Within(b.Within(c)), "associative: %v %v %v", a, b, c)
			}
		}
	}
}
