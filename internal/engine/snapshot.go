package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
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

// initialise makes the image in a wazero instance (see boot).
func (e *Engine) initialise(ctx context.Context) ([]byte, uint32, error) {
	stderr := &output{keep: 64 << 10, limit: NoOutputLimit, full: func() {}}
	st := newRunState(e.newMeter())
	outer := ctx
	ctx, cancel := e.imageContext(ctx, st.meter)
	defer cancel()
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
	return e.boot(outer, ctx, wazeroInstance{m}, stderr, mem.refused.Load)
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
