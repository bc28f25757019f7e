package wasm

import (
	"context"
	"fmt"
	"os"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/wasmpy/wasmpy/pyhost"
)

// preload is imported before the snapshot, so runs find these modules ready.
// random is reseeded by every run; nothing here keeps a file open.
const preload = "import os, json, re, math, collections, itertools, functools, datetime, " +
	"decimal, fractions, statistics, string, hashlib, base64, random, traceback, types, dataclasses, typing\n" +
	"os.environ.clear()\n"

// snapshot initialises the interpreter once and keeps its memory as the
// image every run starts from. Mutable state outside linear memory is only
// the stack pointer, which is back at its start when the host regains control.
func (e *Engine) snapshot(ctx context.Context) error {
	zip, err := os.ReadFile(e.interp.Stdlib)
	if err != nil {
		return fmt.Errorf("wasmpy: standard library: %w", err)
	}
	e.stdlib = stdlibFS(zip)
	stderr := &capture{limit: 64 << 10, full: func() {}}
	st := &runState{clock: newClock(true)}
	ctx = context.WithValue(ctx, stateKey{}, st)
	mem := &memory{limit: 1 << 32}
	ctx = experimental.WithMemoryAllocator(ctx, mem)
	cfg := e.moduleConfig(st.clock, true).WithStdout(stderr).WithStderr(stderr).
		WithEnv("PYTHONHOME", "/usr/local")
	m, err := e.rt.InstantiateModule(ctx, e.mod, cfg)
	if err != nil {
		return fmt.Errorf("wasmpy: instantiate interpreter: %w", err)
	}
	defer m.Close(ctx)
	fail := func(step string, err error) error {
		return fmt.Errorf("wasmpy: interpreter %s: %v: %s", step, err, stderr.bytes())
	}
	if _, err := call(ctx, m, "_initialize"); err != nil {
		return fail("_initialize", err)
	}
	if _, err := call(ctx, m, "Py_InitializeEx", 0); err != nil {
		return fail("Py_InitializeEx", err)
	}
	boot, err := cString(ctx, m, pyhost.Bootstrap(preload))
	if err != nil {
		return fail("bootstrap", err)
	}
	if r, err := call(ctx, m, "PyRun_SimpleString", uint64(boot)); err != nil || int32(r) != 0 {
		return fail("bootstrap", err)
	}
	if _, err := call(ctx, m, "free", uint64(boot)); err != nil {
		return fail("bootstrap", err)
	}
	if e.runCode, err = cString(ctx, m, pyhost.RunMain); err != nil {
		return fail("bootstrap", err)
	}
	image, ok := m.Memory().Read(0, m.Memory().Size())
	if !ok {
		return fail("snapshot", fmt.Errorf("memory unreadable"))
	}
	e.image = append([]byte(nil), image...)
	return nil
}

// runSnapshot starts a fresh instance, lays the image over its memory and
// runs the job: no start function runs, the interpreter is already up.
func (e *Engine) runSnapshot(ctx context.Context, cfg wazero.ModuleConfig, mem *memory) error {
	if uint64(len(e.image)) > mem.limit {
		mem.refused.Store(true)
		return fmt.Errorf("the interpreter needs %d bytes of memory at start", len(e.image))
	}
	m, err := e.rt.InstantiateModule(ctx, e.mod, cfg)
	if err != nil {
		return err
	}
	defer m.Close(ctx)
	lm := m.Memory()
	if grow := (uint32(len(e.image)) - lm.Size()) / 65536; grow > 0 {
		if _, ok := lm.Grow(grow); !ok {
			return fmt.Errorf("memory for the image refused")
		}
	}
	if !lm.Write(0, e.image) {
		return fmt.Errorf("image does not fit the memory")
	}
	_, err = call(ctx, m, "PyRun_SimpleString", uint64(e.runCode))
	return err
}

func call(ctx context.Context, m api.Module, name string, args ...uint64) (uint64, error) {
	fn := m.ExportedFunction(name)
	if fn == nil {
		return 0, fmt.Errorf("the interpreter does not export %s", name)
	}
	r, err := fn.Call(ctx, args...)
	if err != nil || len(r) == 0 {
		return 0, err
	}
	return r[0], nil
}

// cString copies s into guest memory allocated with the guest's malloc.
func cString(ctx context.Context, m api.Module, s string) (uint32, error) {
	p, err := call(ctx, m, "malloc", uint64(len(s)+1))
	if err != nil {
		return 0, err
	}
	if p == 0 || !m.Memory().Write(uint32(p), append([]byte(s), 0)) {
		return 0, fmt.Errorf("malloc(%d) failed", len(s)+1)
	}
	return uint32(p), nil
}
