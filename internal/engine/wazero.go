package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// wazero's side of the seam (seam.go): its instances as instances, and the
// host functions as its host modules. WASI is wazero's own, over the
// mounts moduleConfig gives each instance, with our poll_oneoff.

// wazeroInstance is a wazero module instance.
type wazeroInstance struct{ m api.Module }

func (w wazeroInstance) export(name string) exportFunc {
	fn := w.m.ExportedFunction(name)
	if fn == nil {
		return nil
	}
	return func(ctx context.Context, args ...uint64) (uint64, error) {
		r, err := fn.Call(ctx, args...)
		if err != nil || len(r) == 0 {
			return 0, err
		}
		return r[0], nil
	}
}

func (w wazeroInstance) memory() guestMemory { return w.m.Memory() }

// instantiateHostModules registers WASI and the "wasmpy" module.
func instantiateHostModules(ctx context.Context, rt wazero.Runtime) error {
	builders := map[string]wazero.HostModuleBuilder{}
	wasi := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(wasi)
	builders[wasi_snapshot_preview1.ModuleName] = wasi
	order := []string{wasi_snapshot_preview1.ModuleName}
	for _, f := range hostFuncs {
		b, ok := builders[f.module]
		if !ok {
			b = rt.NewHostModuleBuilder(f.module)
			builders[f.module] = b
			order = append(order, f.module)
		}
		b.NewFunctionBuilder().WithGoModuleFunction(wazeroHostFunc(f), valueTypes(f.params), valueTypes(f.results)).Export(f.name)
	}
	for _, name := range order {
		if _, err := builders[name].Instantiate(ctx); err != nil {
			return fmt.Errorf("wasmpy: host module %s: %w", name, err)
		}
	}
	return nil
}

// valueTypes are the types a hostFunc's params or results spell.
func valueTypes(sig string) []api.ValueType {
	t := make([]api.ValueType, len(sig))
	for i, c := range sig {
		t[i] = api.ValueTypeI32
		if c == 'I' {
			t[i] = api.ValueTypeI64
		}
	}
	return t
}

// wazeroHostFunc is f for wazero, guarded: see guard.
func wazeroHostFunc(f hostFunc) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		defer guard(f.name)
		f.fn(ctx, wazeroInstance{mod}, stack)
	}
}

// guard, deferred, keeps a bug in a host function from becoming a Go panic
// with its stack in the run's error: it ends the run with a one-line
// message. The panics that stop a run on purpose pass through.
func guard(name string) {
	switch r := recover().(type) {
	case nil:
	case error:
		if errors.Is(r, errFuel) || errors.Is(r, errStopped) {
			panic(r)
		}
		panic(fmt.Errorf("wasmpy: host function %s failed: %s", name, r.Error()))
	default:
		panic(fmt.Errorf("wasmpy: host function %s failed: %v", name, r))
	}
}
