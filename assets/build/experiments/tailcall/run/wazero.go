//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/wasmpy/wasmpy/internal/fuel"
)

func init() {
	engines["wazero"] = func(wasm []byte, tail bool) (runner, error) {
		ctx := context.Background()
		features := api.CoreFeaturesV2
		if tail {
			features |= experimental.CoreFeaturesTailCall
		}
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCoreFeatures(features))
		wasi_snapshot_preview1.MustInstantiate(ctx, rt)
		mod, err := rt.CompileModule(ctx, wasm)
		if err != nil {
			return nil, err
		}
		return func() (string, int64, float64, error) {
			var out bytes.Buffer
			m, err := rt.InstantiateModule(ctx, mod, wazero.NewModuleConfig().WithName("").
				WithStdout(&out).WithStartFunctions())
			if err != nil {
				return "", 0, 0, err
			}
			defer m.Close(ctx)
			g, metered := m.ExportedGlobal(fuel.GlobalName).(api.MutableGlobal)
			if metered {
				g.Set(uint64(budget))
			}
			cpu, err := timed(func() error {
				_, err := m.ExportedFunction("_start").Call(ctx)
				return err
			})
			var exit *sys.ExitError
			if errors.As(err, &exit) && exit.ExitCode() == 0 {
				err = nil
			}
			var used int64
			if metered {
				used = budget - int64(g.Get())
			}
			return out.String(), used, cpu, err
		}, nil
	}
}
