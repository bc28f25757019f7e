package engine

import (
	"bytes"
	"context"
	"fmt"

	"github.com/wasmpy/wasmpy/internal/pyhost"
	"github.com/wasmpy/wasmpy/internal/wasmbin"
)

// boot initialises a fresh instance of the wasmpy build, whichever engine
// runs it: it lays the interpreter's data segments into memory, runs
// _initialize, Py_InitializeEx and our bootstrap, and returns the memory
// afterwards (the image) and the address of the runner's code in it. The
// instance's calls must see a runState bound to stderr. (snapshot.go's
// initialise does the same on a wazero module.)
func (e *Engine) boot(ctx context.Context, in instance, stderr *output) ([]byte, uint32, error) {
	fail := func(step string, err error) ([]byte, uint32, error) {
		return nil, 0, fmt.Errorf("wasmpy: interpreter %s: %v: %s", step, err, stderr.bytes())
	}
	_, segments, err := wasmbin.DropActiveData(e.interp.Wasm)
	if err != nil {
		return fail("data segments", err)
	}
	for _, seg := range segments {
		if !in.memory().Write(seg.Offset, seg.Data) {
			return fail("data segments", fmt.Errorf("segment at %#x outside the initial memory", seg.Offset))
		}
	}
	if _, err := callIn(ctx, in, "_initialize"); err != nil {
		return fail("_initialize", err)
	}
	if _, err := callIn(ctx, in, "Py_InitializeEx", 0); err != nil {
		return fail("Py_InitializeEx", err)
	}
	boot, err := cStringIn(ctx, in, pyhost.Bootstrap(e.site.prelude()+preload))
	if err != nil {
		return fail("bootstrap", err)
	}
	if r, err := callIn(ctx, in, "PyRun_SimpleString", uint64(boot)); err != nil || int32(r) != 0 {
		if err := preloadError(stderr.bytes()); err != nil {
			return nil, 0, err
		}
		return fail("bootstrap", err)
	}
	if _, err := callIn(ctx, in, "free", uint64(boot)); err != nil {
		return fail("bootstrap", err)
	}
	runCode, err := cStringIn(ctx, in, pyhost.RunMain)
	if err != nil {
		return fail("bootstrap", err)
	}
	mem := in.memory()
	data, ok := mem.Read(0, mem.Size())
	if !ok {
		return fail("snapshot", fmt.Errorf("memory unreadable"))
	}
	return bytes.Clone(data), runCode, nil
}
