//go:build wasmtime && cgo

package engine

// #include <stdint.h>
// #include <stdlib.h>
// typedef struct wasmtime_store wasmtime_store_t;
// extern void wasmtime_store_delete(wasmtime_store_t *store);
import "C"

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/bytecodealliance/wasmtime-go/v39"
	"github.com/tetratelabs/wazero/sys"

	"github.com/wasmpy/wasmpy/internal/fuel"
	"github.com/wasmpy/wasmpy/packages"
)

// wasmtimeVersion is the wasmtime the binding links: part of the compiled
// module's cache key, since a serialized module loads only in the wasmtime
// that made it.
const wasmtimeVersion = "v39.0.1"

func init() { newWasmtime = startWasmtime }

// wtEngine runs the core build under wasmtime (Cranelift, optimised for
// speed). The WASI functions and the host calls are ours (wasi.go,
// hostcall.go), over the same file systems, streams, clock and meter that
// wazero's runs use. Each run gets a fresh store and instance, whose
// memory maps the image copy-on-write (wasmtime_memory.go).
type wtEngine struct {
	e     *Engine
	fixed []wasiMount // the standard library's and the site's
	img   *image      // mapped into each instance's memory (or copied)
	// The interpreter compiled twice, each loaded when a run first needs
	// it: free, with stop checks (wasmtime_stop.go), for runs without a
	// fuel budget; metered, instrumented for fuel, for runs with one (nil
	// for an unmetered Engine).
	free, metered *wtKind
	cfg           Config
	// plan is where the free kind's signals are raised in the guest's
	// memory (learnSignals).
	plan *signalPlan
	// lingering counts the instances still running: a stopped run's may
	// end after its run has returned; close waits for them.
	lingering sync.WaitGroup

	nextMu  sync.Mutex
	closing bool
	taken   map[*runState]*wtParked // handed to a run by next, for its run
}

// wtKind is one compiled form of the interpreter, in a wasmtime engine of
// its own: the metered one stops a run at its next refuel (see meter); the
// free one at its next stop check once its context is done, which costs
// less than fuel's counting (BENCHMARKS.md) but counts nothing.
type wtKind struct {
	once    sync.Once
	err     error
	engine  *wasmtime.Engine
	module  *wasmtime.Module
	linker  *wasmtime.Linker
	flushes *flushes          // the free kind's flushes of its runs' stdout
	nextCh  chan wtParkResult // the instance parked for its next run (under nextMu); nil until first used
}

// kind loads k (compiles the module, or loads it from the cache) once.
func (w *wtEngine) kind(k *wtKind) (*wtKind, error) {
	k.once.Do(func() {
		isMetered := k == w.metered
		cacheDir := w.cfg.CacheDir
		if cacheDir != "" {
			cacheDir = filepath.Join(cacheDir, "wasmtime")
		}
		wc := wasmtime.NewConfig()
		wc.SetStrategy(wasmtime.StrategyCranelift)
		wc.SetCraneliftOptLevel(wasmtime.OptLevelSpeed)
		wc.SetMaxWasmStack(maxWasmStack())
		installMemory(wc)
		wc.SetWasmMultiMemory(true) // the checked form's stop memory
		k.engine = wasmtime.NewEngineWithConfig(wc)
		f := checked
		if isMetered {
			f = metered // the same prepared module as wazero's
		} else {
			k.flushes = &flushes{}
		}
		wasm, err := w.e.prepareAs(w.cfg.CacheDir, f)
		if err != nil {
			k.err = err
			return
		}
		if k.module, k.err = compileWasmtime(k.engine, wasm, cacheDir); k.err != nil {
			return
		}
		k.linker, k.err = k.link()
	})
	return k, k.err
}

// kindFor is the kind a run with or without a fuel budget runs in.
func (w *wtEngine) kindFor(metered bool) (*wtKind, error) {
	if metered && w.metered != nil {
		return w.kind(w.metered)
	}
	return w.kind(w.free)
}

func startWasmtime(ctx context.Context, e *Engine, cfg Config) (altEngine, error) {
	w := &wtEngine{e: e, cfg: cfg, free: &wtKind{}, taken: map[*runState]*wtParked{}}
	if !cfg.Unmetered {
		w.metered = &wtKind{}
	}
	stdlib, err := stdlibSysFS(e.interp.Stdlib)
	if err != nil {
		return nil, err
	}
	if stdlib != nil {
		w.fixed = append(w.fixed, wasiMount{path: stdlibMount, fs: stdlib})
	}
	if site := e.site.sysFS(); site != nil {
		w.fixed = append(w.fixed, wasiMount{path: packages.SiteDir, fs: site})
	}
	// Both kinds are loaded now (compiled once, then mapped from the
	// cache): a run never pays for a compile inside its deadline (a first
	// budgeted run once spent its whole timeout compiling the metered kind).
	// An instance of the free kind is parked below: most runs ask for no
	// fuel budget.
	for _, k := range []*wtKind{w.free, w.metered} {
		if k == nil {
			continue
		}
		if _, err := w.kind(k); err != nil {
			return nil, err
		}
	}
	// The image is the same bytes whichever engine makes it (both WASIs
	// tell the guest the same: TestImageSameOnEachEngine), so the engines
	// share the cached file, and a session's state runs on either.
	if err := w.snapshot(ctx, cfg.CacheDir); err != nil {
		return nil, err
	}
	e.image = w.img // a session's states are pages over it (state.go)
	if w.plan, err = w.learnSignals(w.free); err != nil {
		return nil, err
	}
	if customMemory {
		w.nextMu.Lock()
		w.free.nextCh = w.parkAhead(w.free)
		w.nextMu.Unlock()
	}
	return w, nil
}

// compile compiles the prepared interpreter, or loads what an earlier
// process compiled: the cache is keyed by the module's SHA-256 and the
// wasmtime version.
func compileWasmtime(engine *wasmtime.Engine, wasm []byte, cacheDir string) (*wasmtime.Module, error) {
	var path string
	if cacheDir != "" {
		key := fmt.Sprintf("%x", sha256.Sum256(append([]byte(wasmtimeVersion+" "+runtime.GOARCH+" speed\x00"), wasm...)))
		path = filepath.Join(cacheDir, "compiled", key[:24]+".cwasm")
		if _, err := os.Stat(path); err == nil {
			if m, err := wasmtime.NewModuleDeserializeFile(engine, path); err == nil {
				return m, nil
			}
		}
	}
	m, err := wasmtime.NewModule(engine, wasm)
	if err != nil {
		return nil, fmt.Errorf("wasmpy: compile interpreter: %w", err)
	}
	if path != "" {
		if b, err := m.Serialize(); err == nil {
			// A cache that cannot be written costs the next process time, nothing else.
			_ = writeFileAtomic(path, b)
		}
	}
	return m, nil
}

// link defines the host functions: WASI's (wasi.go) and ours (seam.go),
// through our trampoline (wasmtime_hostcall.go).
func (k *wtKind) link() (*wasmtime.Linker, error) {
	l := wasmtime.NewLinker(k.engine)
	if err := defineHostFuncs(l); err != nil {
		return nil, err
	}
	return l, nil
}

func valTypes(sig string) []*wasmtime.ValType {
	t := make([]*wasmtime.ValType, len(sig))
	for i, c := range sig {
		t[i] = wasmtime.NewValType(wasmtime.KindI32)
		if c == 'I' {
			t[i] = wasmtime.NewValType(wasmtime.KindI64)
		}
	}
	return t
}

// wtInstance is one instance in its own store.
type wtInstance struct {
	store *wasmtime.Store
	inst  *wasmtime.Instance
	mem   *wasmtime.Memory
	cur   wasmtime.Storelike // the store, or the caller during a host call
	ctx   context.Context    // the run's, with its runState and files
	files *wasiFiles
	err   error // what stopped the instance, kept from the host function that did
	ms    memState
	// beforeDelete run when the instance closes, before its store is
	// deleted; onClose after.
	beforeDelete, onClose []func()
	// stop is the instance's stop flag and signals, for the free kind.
	stop  *stopWatch
	funcs map[string]*wasmtime.Func

	// view is the memory during a host call, until a call back into the
	// instance; storeIndex the binding's index of the store, by which the
	// trampoline finds the instance (see register).
	view       memBytes
	storeIndex uintptr
}

// serve runs a host function, turning the panic that stops a run into an
// error (the first one is kept for the call to return).
func (in *wtInstance) serve(f hostFunc, stack []uint64) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		e, ok := r.(error)
		if !ok {
			e = fmt.Errorf("wasmpy: host function %s failed: %v", f.name, r)
		}
		var exit *sys.ExitError
		if !errors.Is(e, errFuel) && !errors.Is(e, errStopped) && !errors.As(e, &exit) && !strings.HasPrefix(e.Error(), "wasmpy: host function") {
			e = fmt.Errorf("wasmpy: host function %s failed: %s", f.name, e.Error())
		}
		if in.err == nil {
			in.err = e
		}
		err = e
	}()
	f.fn(in.ctx, in, stack)
	return nil
}

func (in *wtInstance) export(name string) exportFunc {
	fn, ok := in.funcs[name]
	if !ok {
		fn = in.inst.GetFunc(in.cur, name)
		in.funcs[name] = fn
	}
	if fn == nil {
		return nil
	}
	return func(_ context.Context, args ...uint64) (uint64, error) {
		vals := make([]any, len(args))
		for i, a := range args {
			vals[i] = int32(uint32(a))
		}
		r, err := fn.Call(in.cur, vals...)
		in.view = nil // the call may have grown the memory
		if err != nil {
			return 0, in.callError(err)
		}
		switch v := r.(type) {
		case int32:
			return uint64(uint32(v)), nil
		case int64:
			return uint64(v), nil
		}
		return 0, nil
	}
}

// callError is the error a call into the instance ended with: what a host
// function stopped it with, else the trap, in the words wazero uses
// (classify reads "wasm error: unreachable" as an abort).
func (in *wtInstance) callError(err error) error {
	if in.err != nil {
		return in.err
	}
	var trap *wasmtime.Trap
	if errors.As(err, &trap) {
		if in.stop != nil && in.stop.stopped.Load() {
			return errStopped // at a stop check (or anywhere, once stopped)
		}
		if code := trap.Code(); code != nil {
			switch *code {
			case wasmtime.UnreachableCodeReached:
				return errors.New("wasm error: unreachable")
			case wasmtime.StackOverflow:
				return errors.New("wasm error: stack overflow")
			case wasmtime.MemoryOutOfBounds:
				return errors.New("wasm error: out of bounds memory access")
			case wasmtime.IndirectCallToNull, wasmtime.TableOutOfBounds, wasmtime.BadSignature:
				return errors.New("wasm error: invalid table access")
			case wasmtime.IntegerDivisionByZero:
				return errors.New("wasm error: integer divide by zero")
			case wasmtime.IntegerOverflow, wasmtime.BadConversionToInteger:
				return errors.New("wasm error: integer overflow")
			}
		}
		return errors.New("wasm error: " + firstLine(trap))
	}
	return err
}

func (in *wtInstance) memory() guestMemory {
	if in.view != nil {
		return in.view
	}
	return memBytes(in.mem.UnsafeData(in.cur))
}

// wtGlobal is the fuel global of an instance.
type wtGlobal struct {
	g  *wasmtime.Global
	in *wtInstance
}

func (g wtGlobal) Get() uint64  { return uint64(g.g.Get(g.in.cur).I64()) }
func (g wtGlobal) Set(v uint64) { _ = g.g.Set(g.in.cur, wasmtime.ValI64(int64(v))) }

// instantiate makes an instance in a store of its own, with st's streams,
// clock and file systems, and its memory limited to limit bytes.
func (w *wtEngine) instantiate(ctx context.Context, k *wtKind, st *runState, limit uint64, env []string, img *image) (*wtInstance, error) {
	in := &wtInstance{funcs: map[string]*wasmtime.Func{}}
	in.store = wasmtime.NewStoreWithData(k.engine, in)
	in.cur = in.store
	in.register()
	if !customMemory {
		in.store.Limiter(int64(limit), -1, -1, -1, -1)
	}
	mounts := append(append([]wasiMount{}, w.fixed...), wasiMount{path: filesMount, fs: boundFS{st: st}}, wasiMount{path: AppMount, fs: boundFS{st: st, app: true}})
	in.files = newWasiFiles(st, env, mounts)
	in.ctx = withFiles(context.WithValue(ctx, stateKey{}, st), in.files)
	var inst *wasmtime.Instance
	var err error
	in.ms, err = withMemory(limit, img, func() (err error) {
		inst, err = k.linker.Instantiate(in.store, k.module)
		return err
	})
	if err != nil {
		in.close()
		return nil, fmt.Errorf("wasmpy: instantiate: %w", err)
	}
	in.inst = inst
	ex := inst.GetExport(in.store, "memory")
	if ex == nil || ex.Memory() == nil {
		in.close()
		return nil, errors.New("wasmpy: the interpreter exports no memory")
	}
	in.mem = ex.Memory()
	return in, nil
}

// close frees the store now rather than when Go's collector finalizes it:
// its memory is the run's whole heap.
func (in *wtInstance) close() {
	if in.files != nil {
		in.files.close()
	}
	s := in.store
	if s == nil {
		return
	}
	for _, f := range in.beforeDelete {
		f()
	}
	in.unregister()
	in.store, in.cur = nil, nil
	runtime.SetFinalizer(s, nil)
	ptr := *(**C.wasmtime_store_t)(unsafe.Pointer(s)) // Store's first field, _ptr
	C.wasmtime_store_delete(ptr)
	for _, f := range in.onClose {
		f()
	}
}

// counter is the instance's fuel global, nil for an unmetered module.
func (in *wtInstance) counter() counter {
	ex := in.inst.GetExport(in.store, fuel.GlobalName)
	if ex == nil || ex.Global() == nil {
		return nil
	}
	return wtGlobal{g: ex.Global(), in: in}
}

// snapshot makes the image (or loads it from the cache).
func (w *wtEngine) snapshot(ctx context.Context, cacheDir string) error {
	var path string
	if cacheDir != "" {
		path = imagePath(filepath.Join(cacheDir, "snapshots"), w.e.key)
		if img, err := openImage(path); err == nil {
			w.img = img
			if len(img.hot) == 0 { // made before the hot pages were learnt here
				if img.hot = w.learnHotPages(); len(img.hot) > 0 {
					if data, err := viewImage(img); err == nil {
						_ = writeImage(path, data, img)
						if img.fd >= 0 {
							unmap(data)
						}
					}
				}
			}
			return nil
		}
	}
	// Made in the metered kind where there is one: its fuel bounds the
	// preloads' code as wazero's does.
	k, err := w.kindFor(true)
	if err != nil {
		return err
	}
	stderr := &output{keep: 64 << 10, limit: NoOutputLimit, full: func() {}}
	st := newRunState(w.newMeter(k))
	outer := ctx
	ctx, cancel := w.e.imageContext(ctx, st.meter)
	defer cancel()
	st.bind(ctx, &Run{Deterministic: true}, nil, stderr, stderr)
	close(st.ready)
	in, err := w.instantiate(ctx, k, st, w.e.imageMemory, append(guestEnv(), "PYTHONHOME=/usr/local"), nil)
	if err != nil {
		return err
	}
	defer in.close()
	st.meter.startCounter(in.counter(), math.MaxInt64)
	defer st.meter.stop()
	data, runCode, err := w.e.boot(outer, in.ctx, in, stderr, in.ms.refused)
	if err != nil {
		return err
	}
	w.img = newImage(data, runCode)
	if sp := w.signalsPath(); sp != "" {
		_ = os.Remove(sp) // learnt from the image this one replaces
	}
	w.img.hot = w.learnHotPages()
	if path != "" {
		// A cache that cannot be written costs the next process time, nothing else.
		_ = writeImage(path, data, w.img)
	}
	return nil
}

// learnHotPages runs print(1) and notes the pages of the image it wrote,
// for later instances to copy ahead (see image.hot), as wazero's engine does.
func (w *wtEngine) learnHotPages() []pageRun {
	if !customMemory {
		return nil
	}
	st := newRunState(nil)
	p, err := w.park(w.free, st, DefaultMemoryLimit)
	if err != nil {
		return nil
	}
	var hot []pageRun
	p.learn = func(mem []byte) { hot, _ = writtenPages(mem, w.img.size/pageSize) }
	w.nextMu.Lock()
	w.taken[st] = p
	w.nextMu.Unlock()
	j, _ := json.Marshal(job{Filename: "<string>", Argv: []string{"<string>"}})
	st.bind(context.Background(), &Run{Code: "print(1)"}, j, io.Discard, io.Discard)
	if _, err := w.run(context.Background(), st, DefaultMemoryLimit, math.MaxInt64, false); err != nil {
		return nil
	}
	return hot
}

// wtParked is an instance made ahead of its run, as wazero's parked ones
// are: the image in its memory and its runner started and waiting in _job;
// or, for a session's turn from a state, the state's pages over the image
// and no runner yet (started inside the run).
type wtParked struct {
	in      *wtInstance
	st      *runState
	mem     *memory
	cancel  context.CancelCauseFunc
	kind    *wtKind
	started bool          // its runner is started
	fail    error         // why it cannot run (a state past the run's memory limit)
	done    chan struct{} // closed when its runner's call has returned
	err     error         // what the call returned
	ret     int32         // and its result: 0 when the runner ended normally
	// hold, when set before the runner starts, keeps the instance (its
	// memory readable in mem) after its call until it is closed.
	hold chan struct{}
	// learn, when set, sees the memory once the call has returned (see
	// snapshot); set it before the run.
	learn func(mem []byte)
}

type wtParkResult struct {
	p   *wtParked
	err error
}

// blank makes an instance for st with its memory limited to limit, the
// image in its memory (and from's pages over it, when from is not nil),
// grown to the size of either. No guest code runs.
func (w *wtEngine) blank(k *wtKind, st *runState, limit uint64, from *State) (*wtParked, error) {
	mem := &memory{limit: limit}
	size := uint64(w.img.size)
	if from != nil {
		size = max(size, from.size)
	}
	if size > limit {
		mem.refused.Store(true)
		return &wtParked{mem: mem}, fmt.Errorf("the interpreter needs %d bytes of memory at start", size)
	}
	ctx, cancel := context.WithCancelCause(w.e.alive)
	in, err := w.instantiate(ctx, k, st, limit, guestEnv(), w.img)
	if err != nil {
		cancel(err)
		return &wtParked{mem: mem}, err
	}
	fail := func(err error) (*wtParked, error) {
		cancel(err)
		in.close()
		return &wtParked{mem: mem}, err
	}
	if cur := uint64(in.mem.DataSize(in.store)); size > cur {
		if _, err := in.mem.Grow(in.store, (size-cur)/65536); err != nil {
			mem.refused.Store(true)
			return fail(fmt.Errorf("memory for the image refused: %w", err))
		}
	}
	data := in.mem.UnsafeData(in.store)
	view := &memory{buf: data}
	if in.ms.mapped(w.img) {
		view.mapping = data
		prefault(w.img, data) // the pages a small run writes, copied ahead
	} else {
		copy(data, w.img.data)
	}
	if from != nil {
		if err := from.apply(view); err != nil {
			return fail(fmt.Errorf("wasmpy: start instance: %w", err))
		}
	}
	st.intr.in, st.intr.ctx = in, in.ctx
	mem.peak.Store(size)
	p := &wtParked{in: in, st: st, mem: mem, cancel: cancel, kind: k, done: make(chan struct{})}
	if k.flushes != nil {
		if err = w.watchStop(in, st); err != nil {
			return fail(err)
		}
	}
	return p, nil
}

// launch starts p's runner, PyRun_SimpleString of the image's entry, with
// budget units of fuel. The instance runs in a goroutine of its own: it
// waits for its job there, and a run stopped while its guest waits in a
// host call (a blocked stream) returns as a wazero run does, after
// stopGrace, leaving the instance to end.
func (w *wtEngine) launch(p *wtParked, budget int64) {
	in, st, mem := p.in, p.st, p.mem
	p.started = true
	st.meter.startCounter(in.counter(), budget)
	w.lingering.Add(1)
	go func() {
		defer w.lingering.Done()
		defer in.close()
		var r uint64
		r, p.err = callIn(in.ctx, in, "PyRun_SimpleString", uint64(w.img.runCode))
		if in.stop != nil {
			in.stop.quiesce()
		}
		p.ret = int32(r)
		st.meter.stop()
		data := in.mem.UnsafeData(in.store)
		mem.peak.Store(uint64(len(data)))
		if in.ms.refused() {
			mem.refused.Store(true)
		}
		if p.learn != nil {
			p.learn(data)
		}
		if p.hold != nil {
			mem.buf = data
			if in.ms.mapped(w.img) {
				mem.mapping = data
			}
		}
		close(p.done)
		if p.hold != nil {
			<-p.hold
			mem.buf, mem.mapping = nil, nil
		}
	}()
}

// park makes an instance for st with its memory limited to limit and
// starts its runner, which waits for its job.
func (w *wtEngine) park(k *wtKind, st *runState, limit uint64) (*wtParked, error) {
	p, err := w.blank(k, st, limit, nil)
	if err != nil {
		return p, err
	}
	// The runner's start is not the run's, but it is bounded as wazero's
	// parked start is (parkFuel): the run's budget replaces it at _job.
	w.launch(p, parkFuel)
	select {
	case <-st.waiting:
		return p, nil
	case <-p.done:
		why := fmt.Sprint(p.err)
		if st.meter.exhausted() {
			why = fmt.Sprintf("it ran past %d units of fuel (a preloaded module's code?)", parkFuel)
		}
		return &wtParked{mem: p.mem}, fmt.Errorf("wasmpy: start instance: the runner ended before asking for its job: %s", why)
	}
}

// parkAhead parks an instance of kind k for its next run.
func (w *wtEngine) parkAhead(k *wtKind) chan wtParkResult {
	c := make(chan wtParkResult, 1)
	go func() {
		p, err := w.park(k, newRunState(w.newMeter(k)), maxMemory)
		c <- wtParkResult{p, err}
	}()
	return c
}

// newMeter is the meter of an instance of kind k: none for the free kind.
func (w *wtEngine) newMeter(k *wtKind) *meter {
	if k != w.metered {
		return nil
	}
	m := w.e.newMeter()
	if m != nil {
		m.slice = wasmtimeSlice
	}
	return m
}

// next hands the instance parked ahead to a run (where memories are ours,
// so its limit can be set when the run comes) and parks the next one; a
// session's turn from a state gets an instance laid from it. A run with a
// fuel budget (metered) runs in the metered kind, one without in the free
// kind.
func (w *wtEngine) next(from *State, limit uint64, metered bool) (*runState, error) {
	k, err := w.kindFor(metered)
	if err != nil {
		return nil, err
	}
	if from != nil || !customMemory {
		st := newRunState(w.newMeter(k))
		p := &wtParked{kind: k}
		if from != nil {
			if p, err = w.blank(k, st, limit, from); err != nil && !p.mem.refused.Load() {
				return nil, err
			}
			p.fail = err // a state past the limit: the run fails with KindMemory
		}
		w.nextMu.Lock()
		w.taken[st] = p
		w.nextMu.Unlock()
		return st, nil
	}
	w.nextMu.Lock()
	if w.closing {
		w.nextMu.Unlock()
		return nil, errClosed
	}
	c := k.nextCh
	if c == nil { // the kind's first run: it waits for its instance
		c = w.parkAhead(k)
	}
	k.nextCh = w.parkAhead(k)
	w.nextMu.Unlock()
	r := <-c
	if r.err != nil {
		return nil, r.err
	}
	w.nextMu.Lock()
	w.taken[r.p.st] = r.p
	w.nextMu.Unlock()
	return r.p.st, nil
}

func (w *wtEngine) run(ctx context.Context, st *runState, limit uint64, budget int64, hold bool) (altRun, error) {
	w.nextMu.Lock()
	p, ok := w.taken[st]
	delete(w.taken, st)
	w.nextMu.Unlock()
	ar := altRun{ret: -1, release: func() {}}
	if !ok {
		return ar, errors.New("wasmpy: run without next")
	}
	if p.in == nil && p.fail == nil { // no instance made ahead (no memories of ours)
		var err error
		if p, err = w.park(p.kind, st, limit); err != nil {
			ar.mem = p.mem
			return ar, err
		}
	} else if p.fail != nil {
		ar.mem = p.mem
		return ar, p.fail
	} else if p.mem.limit = limit; p.started && !p.in.ms.limit(limit) {
		p.mem.refused.Store(true)
		p.cancel(errDiscarded)
		ar.mem = p.mem
		return ar, fmt.Errorf("the interpreter needs more than %d bytes of memory at start", limit)
	}
	ar.mem = p.mem
	if hold {
		if p.started { // the hold must be set before the runner's call returns: it waits in _job
			p.hold = make(chan struct{})
		}
	}
	if p.started {
		st.onJob = func() { st.meter.reset(budget) }
	} else {
		// Laid from a state: whatever the guest left there runs from the
		// runner's start, under the run's budget and limits.
		if hold {
			p.hold = make(chan struct{})
		}
		w.launch(p, budget)
	}
	if p.hold != nil {
		var once sync.Once
		ar.release = func() { once.Do(func() { close(p.hold) }) }
	}
	if p.in.stop != nil {
		stopWatch := p.kind.flushes.watch(ctx, p.in.stop)
		go func() { <-p.done; stopWatch() }()
	}
	defer context.AfterFunc(ctx, func() { p.cancel(context.Cause(ctx)) })()
	close(st.ready)
	finished := func() (altRun, error) { ar.ret = p.ret; return ar, p.err }
	select {
	case <-p.done:
		p.cancel(errDiscarded)
		return finished()
	case <-ctx.Done():
	}
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	select {
	case <-p.done:
		return finished()
	case <-grace.C:
		return ar, errLeftToStop
	}
}

func (w *wtEngine) close() error {
	w.nextMu.Lock()
	w.closing = true
	var parked []chan wtParkResult
	for _, k := range []*wtKind{w.free, w.metered} {
		if k != nil && k.nextCh != nil {
			parked = append(parked, k.nextCh)
			k.nextCh = nil
		}
	}
	w.nextMu.Unlock()
	for _, c := range parked {
		if r := <-c; r.err == nil {
			r.p.cancel(errDiscarded) // its runner's _job call is refused
		}
	}
	w.lingering.Wait() // the engine's kill has stopped them
	if w.img != nil {
		closeImage(w.img)
	}
	for _, k := range []*wtKind{w.free, w.metered} {
		if k == nil {
			continue
		}
		k.once.Do(func() {}) // none loads now
		if k.err == nil && k.engine != nil {
			k.linker.Close()
			k.module.Close()
			k.engine.Close()
		}
	}
	return nil
}
