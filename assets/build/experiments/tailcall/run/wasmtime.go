//go:build linux && wasmtime

package main

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/bytecodealliance/wasmtime-go/v39"

	"github.com/wasmpy/wasmpy/internal/fuel"
)

func init() {
	engines["wasmtime"] = func(wasm []byte, tail bool) (runner, error) {
		cfg := wasmtime.NewConfig()
		cfg.SetStrategy(wasmtime.StrategyCranelift)
		cfg.SetCraneliftOptLevel(wasmtime.OptLevelSpeed)
		cfg.SetWasmTailCall(tail)
		engine := wasmtime.NewEngineWithConfig(cfg)
		mod, err := wasmtime.NewModule(engine, wasm)
		if err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp("", "tailcall-run-")
		if err != nil {
			return nil, err
		}
		stdout := filepath.Join(dir, "stdout")
		return func() (string, int64, float64, error) {
			store := wasmtime.NewStore(engine)
			wasi := wasmtime.NewWasiConfig()
			if err := wasi.SetStdoutFile(stdout); err != nil {
				return "", 0, 0, err
			}
			wasi.InheritStderr()
			store.SetWasi(wasi)
			linker := wasmtime.NewLinker(engine)
			if err := linker.DefineWasi(); err != nil {
				return "", 0, 0, err
			}
			inst, err := linker.Instantiate(store, mod)
			if err != nil {
				return "", 0, 0, err
			}
			var g *wasmtime.Global
			if ex := inst.GetExport(store, fuel.GlobalName); ex != nil {
				g = ex.Global()
			}
			if g != nil {
				if err := g.Set(store, wasmtime.ValI64(budget)); err != nil {
					return "", 0, 0, err
				}
			}
			start := inst.GetFunc(store, "_start")
			cpu, err := timed(func() error {
				_, err := start.Call(store)
				return err
			})
			var werr *wasmtime.Error
			if errors.As(err, &werr) {
				if code, ok := werr.ExitStatus(); ok && code == 0 {
					err = nil
				}
			}
			var used int64
			if g != nil {
				used = budget - g.Get(store).I64()
			}
			out, rerr := os.ReadFile(stdout)
			return string(out), used, cpu, errors.Join(err, rerr)
		}, nil
	}
}
