package fuel_test

import (
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
)

// FuzzInstrument checks that Instrument never panics and never turns a
// module wazero accepts into one it rejects (see checkInstrument). Seeds:
// the test modules, their instrumented copies, and the builder's modules;
// interesting finds are in testdata/fuzz/FuzzInstrument.
//
//	go test ./internal/fuel -run '^$' -fuzz FuzzInstrument -fuzztime 5m
func FuzzInstrument(f *testing.F) {
	for _, name := range []string{"ops.wasm", "cost.wasm", "features.wasm", "env.wasm"} {
		wasm := readTestdata(f, name)
		f.Add(wasm)
		f.Add(instrument(f, wasm))
	}
	f.Add(oneFunc(body(vec([]byte{0x02, 0x7e}), 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b)))
	f.Add(module(section(secCustom, name("name"), []byte{0x01, 0x00})))

	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().WithCoreFeatures(testFeatures))
	f.Cleanup(func() { _ = rt.Close(ctx) })
	f.Fuzz(func(t *testing.T, in []byte) {
		checkInstrument(t, rt, in)
	})
}
