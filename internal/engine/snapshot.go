package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/wasmpy/wasmpy/internal/pyhost"
	"github.com/wasmpy/wasmpy/internal/wasmbin"
)

// preload is imported before the snapshot, so runs find these modules ready.
// random is reseeded by every run; nothing here keeps a file open.
const preload = "import os, json, re, math, collections, itertools, functools, datetime, " +
	"decimal, fractions, statistics, string, hashlib, base64, random, traceback, types, dataclasses, typing, asyncio\n" +
	// Out of sys.modules until imported, as in python3: logging raises and
	// catches an exception per record when it finds asyncio there.
	"__import__('_wasmpy_runner').hide('asyncio')\n" +
	"os.environ.clear()\n" +
	// Objects of the image stay out of the collector's sight, so a run's
	// collections neither walk nor touch (copy) the image's pages.
	"import gc; gc.collect(); gc.freeze()\n"

var errImageTimeout = errors.New("wasmpy: making the image timed out")

// snapshot gives the engine its image: from the cache when an earlier
// process made it, else by initialising the interpreter once.
func (e *Engine) snapshot(ctx context.Context, cacheDir string) error {
	var path string
	if cacheDir != "" {
		path = imagePath(filepath.Join(cacheDir, "snapshots"), e.key)
		if img, err := openImage(path); err == nil {
			e.image = img
			return nil
		}
	}
	data, runCode, err := e.initialise(ctx)
	if err != nil {
		return err
	}
	e.image = newImage(data, runCode)
	e.image.hot = e.learnHotPages()
	if path != "" {
		// A cache that cannot be written costs the next process time, nothing else.
		_ = writeImage(path, data, e.image)
	}
	return nil
}

// initialise runs the interpreter's initialisation and our bootstrap, and
// returns the memory afterwards. Mutable state outside linear memory is only
// the stack pointer, which is back at its start when the host regains control.
//
// It runs the preloads and the package sets' .pth lines, so it is bounded
// as a run is: by e.imageTimeout (and ctx) and e.imageMemory.
func (e *Engine) initialise(ctx context.Context) ([]byte, uint32, error) {
	stderr := &output{keep: 64 << 10, limit: NoOutputLimit, full: func() {}}
	st := newRunState(e.newMeter())
	outer := ctx
	ctx, cancel := context.WithTimeoutCause(ctx, e.imageTimeout, errImageTimeout)
	defer cancel()
	if deadline, ok := ctx.Deadline(); ok {
		st.meter.until(deadline, cancel)
	}
	mem := &memory{limit: e.imageMemory}
	st.bind(ctx, &Run{Deterministic: true}, nil, stderr, stderr)
	ctx = context.WithValue(ctx, stateKey{}, st)
	ctx = experimental.WithMemoryAllocator(ctx, mem)
	cfg := e.moduleConfig(st).WithEnv("PYTHONHOME", "/usr/local")
	m, err := e.rt.InstantiateModule(ctx, e.mod, cfg)
	if err != nil {
		return nil, 0, fmt.Errorf("wasmpy: instantiate interpreter: %w", err)
	}
	defer m.Close(ctx)
	st.meter.start(m, math.MaxInt64)
	defer st.meter.stop()
	fail := func(step string, err error) ([]byte, uint32, error) {
		switch {
		case outer.Err() != nil:
			return nil, 0, fmt.Errorf("wasmpy: making the interpreter's image: %w", context.Cause(outer))
		case ctx.Err() != nil:
			return nil, 0, &PreloadError{Line: fmt.Sprintf("wasmpy: making the interpreter's image took longer than %v: a preloaded module or a package set's .pth line does not finish", e.imageTimeout)}
		case mem.refused.Load():
			return nil, 0, &PreloadError{Line: fmt.Sprintf("wasmpy: making the interpreter's image needed more than %s of memory: a preloaded module or a package set's .pth line", sizeText(e.imageMemory))}
		}
		return nil, 0, fmt.Errorf("wasmpy: interpreter %s: %v: %s", step, err, stderr.bytes())
	}
	_, segments, err := wasmbin.DropActiveData(e.interp.Wasm)
	if err != nil {
		return fail("data segments", err)
	}
	for _, seg := range segments {
		if !m.Memory().Write(seg.Offset, seg.Data) {
			return fail("data segments", fmt.Errorf("segment at %#x outside the initial memory", seg.Offset))
		}
	}
	if _, err := call(ctx, m, "_initialize"); err != nil {
		return fail("_initialize", err)
	}
	if _, err := call(ctx, m, "Py_InitializeEx", 0); err != nil {
		return fail("Py_InitializeEx", err)
	}
	boot, err := cString(ctx, m, pyhost.Bootstrap(e.site.prelude()+preload))
	if err != nil {
		return fail("bootstrap", err)
	}
	if r, err := call(ctx, m, "PyRun_SimpleString", uint64(boot)); err != nil || int32(r) != 0 {
		if ctx.Err() != nil || mem.refused.Load() {
			return fail("bootstrap", err)
		}
		if err := preloadError(stderr.bytes()); err != nil {
			return nil, 0, err
		}
		return fail("bootstrap", err)
	}
	if _, err := call(ctx, m, "free", uint64(boot)); err != nil {
		return fail("bootstrap", err)
	}
	runCode, err := cString(ctx, m, pyhost.RunMain)
	if err != nil {
		return fail("bootstrap", err)
	}
	data, ok := m.Memory().Read(0, m.Memory().Size())
	if !ok {
		return fail("snapshot", fmt.Errorf("memory unreadable"))
	}
	return bytes.Clone(data), runCode, nil
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
