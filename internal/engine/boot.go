package engine

import (
	"bytes"
	"context"
	"fmt"

	"github.com/wasmpy/wasmpy/internal/pyhost"
	"github.com/wasmpy/wasmpy/internal/wasmbin"
)

// imageContext bounds making the image, whichever engine makes it: the
// preloads and the package sets' .pth lines run then, so it ends by
// e.imageTimeout (and ctx) as a run ends by its timeout. The meter stops
// the instance at its deadline; call cancel when done.
func (e *Engine) imageContext(ctx context.Context, m *meter) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeoutCause(ctx, e.imageTimeout, errImageTimeout)
	if deadline, ok := ctx.Deadline(); ok {
		m.until(deadline, cancel)
	}
	return ctx, cancel
}

// boot initialises a fresh instance of the core build, whichever engine
// runs it: it lays the interpreter's data segments into memory, runs
// _initialize, Py_InitializeEx and our bootstrap, and returns the memory
// afterwards (the image) and the address of the runner's code in it.
// Mutable state outside linear memory is only the stack pointer, which is
// back at its start when the host regains control. The instance's calls
// must see a runState bound to stderr; ctx is imageContext's, made from
// outer, and the instance's memory limit is e.imageMemory, past which
// refused reports true.
func (e *Engine) boot(outer, ctx context.Context, in instance, stderr *output, refused func() bool) ([]byte, uint32, error) {
	fail := func(step string, err error) ([]byte, uint32, error) {
		switch {
		case outer.Err() != nil:
			return nil, 0, fmt.Errorf("wasmpy: making the interpreter's image: %w", context.Cause(outer))
		case ctx.Err() != nil:
			return nil, 0, &PreloadError{Line: fmt.Sprintf("wasmpy: making the interpreter's image took longer than %v: a preloaded module or a package set's .pth line does not finish", e.imageTimeout)}
		case refused():
			return nil, 0, &PreloadError{Line: fmt.Sprintf("wasmpy: making the interpreter's image needed more than %s of memory: a preloaded module or a package set's .pth line", sizeText(e.imageMemory))}
		}
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
		if ctx.Err() != nil || refused() {
			return fail("bootstrap", err)
		}
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
