//go:build wasmtime && cgo

package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/wasmpy/wasmpy/internal/fuel"
)

// A run without a fuel budget runs the checked form of the interpreter
// (fuel.InstrumentChecks): where the metered form charges fuel, it tests a
// stop flag in a memory of its own, which the guest's code never
// addresses, and traps once the flag is set. Nothing in its loops calls
// out of wasm, which is what made wasmtime's epoch interruption cost about
// a fifth of CPython's speed (BENCHMARKS.md): the host stops a run by
// setting the flag, from any thread, and the guest traps at its next check.
//
// What the epoch callback used to do inside the guest, raising Ctrl-C's
// KeyboardInterrupt and having the guest flush its stdout, the host now
// does as a signal does it natively: it writes the words
// PyErr_SetInterruptEx writes (the signal's tripped flag, the interpreter's
// is_tripped, its eval breaker bit) into the guest's memory, from another
// thread, and CPython runs the Python handler at its next bytecode
// boundary. Where those words are is learnt once per engine, from the
// image (learnSignals).

// flushTick is how often a run without a budget has its stdout flushed,
// and a signal that its guest has not taken yet asked for again.
const flushTick = 10 * time.Millisecond

// signalWord is one word PyErr_SetInterruptEx sets bits of: its offset in
// the guest's memory and the bits.
type signalWord struct {
	addr uint32
	bits uint32
}

// signalPlan is where raising a signal writes in an instance laid from the
// image: the same for every instance, as the image is.
type signalPlan struct {
	// shared are the words every signal sets: is_tripped and the main
	// thread's eval breaker.
	shared []signalWord
	// tripped is each signal's own flag (Handlers[sig].tripped), by signal.
	tripped map[int32]signalWord
	// ignore and dfl are the handler objects of SIG_IGN and SIG_DFL, as
	// the word after a signal's flag (Handlers[sig].func) holds them: a
	// signal with either is not raised, as PyErr_SetInterruptEx does not.
	ignore, dfl uint32
	// ignoreInt and dflInt are what those objects hold past their
	// refcount: their type and their value (an int's tag and first digit).
	// SIG_IGN is a function's table index, past the small ints in a large
	// build, so each signal.signal(sig, SIG_IGN) stores an int object of
	// its own: CPython compares handlers by value, and so does raise.
	ignoreInt, dflInt intObject
}

// intObject is an int's type, tag and first digit (PyLongObject past
// ob_refcnt, wasm32).
type intObject [3]uint32

// intObjectAt reads the intObject of the object at addr of a memory of
// size bytes, reading each word with read; false if it is not inside.
func intObjectAt(addr uint32, size uint64, read func(uint32) uint32) (intObject, bool) {
	if addr%4 != 0 || uint64(addr)+16 > size {
		return intObject{}, false
	}
	return intObject{read(addr + 4), read(addr + 8), read(addr + 12)}, true
}

// handlerOffset is where a signal's handler is from its flag: CPython's
// Handlers[sig] is {int tripped; PyObject *func} (wasm32).
const handlerOffset = 4

// learnSignals learns where a signal is raised in the guest's memory: in a
// fresh instance of the image, it calls PyErr_SetInterruptEx, once per
// signal the host raises, and compares the memory with the image. Raising
// a signal must have set bits of exactly three words, two of them the same
// for each signal; anything else and the engine does not start, since
// neither Ctrl-C nor streamed output would work.
//
// The plan depends on the image alone, so it is kept beside the image's
// file in the cache (signalsPath), and read from there by later processes.
func (w *wtEngine) learnSignals(k *wtKind) (*signalPlan, error) {
	path := w.signalsPath()
	if plan, err := readSignals(path, w.img); err == nil {
		return plan, nil
	}
	plan, err := w.learnSignalsNow(k)
	if err == nil && path != "" {
		if b, err := json.Marshal(signalsFile{Image: w.img.size, RunCode: w.img.runCode, Plan: plan.export()}); err == nil {
			_ = writeFileAtomic(path, b) // a cache that cannot be written costs the next process time, nothing else
		}
	}
	return plan, err
}

// signalsPath is where the plan for the engine's image is kept, "" without
// a cache dir. The snapshot removes it when it makes a new image.
func (w *wtEngine) signalsPath() string {
	if w.cfg.CacheDir == "" {
		return ""
	}
	return strings.TrimSuffix(imagePath(filepath.Join(w.cfg.CacheDir, "snapshots"), w.e.key), ".img") + ".signals.json"
}

// signalsFile is the plan as kept in the cache, with what identifies the
// image it was learnt from.
type signalsFile struct {
	Image   int            `json:"image_size"`
	RunCode uint32         `json:"run_code"`
	Plan    exportedSignal `json:"plan"`
}

type exportedSignal struct {
	IgnoreInt intObject           `json:"ignore_int"`
	DflInt    intObject           `json:"dfl_int"`
	Shared    [][2]uint32         `json:"shared"`
	Tripped   map[int32][2]uint32 `json:"tripped"`
	Ignore    uint32              `json:"ignore"`
	Dfl       uint32              `json:"dfl"`
}

func (p *signalPlan) export() exportedSignal {
	x := exportedSignal{Tripped: map[int32][2]uint32{}, Ignore: p.ignore, Dfl: p.dfl, IgnoreInt: p.ignoreInt, DflInt: p.dflInt}
	for _, w := range p.shared {
		x.Shared = append(x.Shared, [2]uint32{w.addr, w.bits})
	}
	for sig, w := range p.tripped {
		x.Tripped[sig] = [2]uint32{w.addr, w.bits}
	}
	return x
}

// readSignals reads the plan kept for img, checked as learnSignals checks
// what it learns, and every word inside the image.
func readSignals(path string, img *image) (*signalPlan, error) {
	if path == "" {
		return nil, errors.New("no cache")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f signalsFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	if f.Image != img.size || f.RunCode != img.runCode || len(f.Plan.Shared) != 2 || len(f.Plan.Tripped) != 2 {
		return nil, errors.New("not this image's")
	}
	inside := func(w [2]uint32) bool {
		return w[1] != 0 && uint64(w[0])+handlerOffset+4 <= uint64(img.size) && w[0]%4 == 0
	}
	if f.Plan.IgnoreInt[0] == 0 || f.Plan.DflInt[0] != f.Plan.IgnoreInt[0] || f.Plan.IgnoreInt == f.Plan.DflInt {
		return nil, errors.New("no int objects for SIG_IGN and SIG_DFL")
	}
	plan := &signalPlan{tripped: map[int32]signalWord{}, ignore: f.Plan.Ignore, dfl: f.Plan.Dfl, ignoreInt: f.Plan.IgnoreInt, dflInt: f.Plan.DflInt}
	for _, w := range f.Plan.Shared {
		if !inside(w) {
			return nil, errors.New("a word outside the image")
		}
		plan.shared = append(plan.shared, signalWord{w[0], w[1]})
	}
	for _, sig := range []int32{sigint, sigflush} {
		w, ok := f.Plan.Tripped[sig]
		if !ok || !inside(w) {
			return nil, errors.New("a signal missing, or outside the image")
		}
		plan.tripped[sig] = signalWord{w[0], w[1]}
	}
	return plan, nil
}

func (w *wtEngine) learnSignalsNow(k *wtKind) (*signalPlan, error) {
	img, err := viewImage(w.img)
	if err != nil {
		return nil, err
	}
	if w.img.fd >= 0 {
		defer unmap(img)
	}
	sets := map[int32][]signalWord{}
	for _, sig := range []int32{sigint, sigflush} {
		st := newRunState(nil)
		p, err := w.blank(k, st, DefaultMemoryLimit, nil)
		if err != nil {
			return nil, err
		}
		_, err = callIn(p.in.ctx, p.in, interruptExport, uint64(sig))
		if err == nil {
			sets[sig], err = setBits(img, p.in.mem.UnsafeData(p.in.store))
		}
		p.cancel(errDiscarded)
		p.in.close()
		if err != nil {
			return nil, fmt.Errorf("wasmpy: learning where signal %d is raised: %w", sig, err)
		}
	}
	a, b := sets[sigint], sets[sigflush]
	plan := &signalPlan{tripped: map[int32]signalWord{}}
	for _, x := range a {
		if slices.Contains(b, x) {
			plan.shared = append(plan.shared, x)
		}
	}
	for sig, words := range sets {
		for _, x := range words {
			if !slices.Contains(plan.shared, x) {
				plan.tripped[sig] = x
			}
		}
	}
	if len(a) != 3 || len(b) != 3 || len(plan.shared) != 2 || len(plan.tripped) != 2 || plan.tripped[sigint].addr == plan.tripped[sigflush].addr {
		return nil, fmt.Errorf("wasmpy: the interpreter raises signals unlike CPython 3.13 (SIGINT set %v, SIGUSR1 %v): neither Ctrl-C nor streamed output could reach a run without a fuel budget", a, b)
	}
	if err := w.learnHandlers(k, plan); err != nil {
		return nil, fmt.Errorf("wasmpy: learning how the interpreter ignores a signal: %w", err)
	}
	return plan, nil
}

// learnHandlers learns what SIGINT's handler word holds once the guest has
// set SIG_IGN, then SIG_DFL (signal.signal, in a fresh instance of the
// image): both must be other than the image's handler and each other.
func (w *wtEngine) learnHandlers(k *wtKind, plan *signalPlan) error {
	p, err := w.blank(k, newRunState(nil), DefaultMemoryLimit, nil)
	if err != nil {
		return err
	}
	defer func() { p.cancel(errDiscarded); p.in.close() }()
	at := plan.tripped[sigint].addr + handlerOffset
	word := func() uint32 { v, _ := p.in.memory().ReadUint32Le(at); return v }
	image := word()
	handler := func(name string) (uint32, intObject, error) {
		code := append([]byte("import signal\nsignal.signal(signal.SIGINT, signal."+name+")\n"), 0)
		ptr, err := callIn(p.in.ctx, p.in, "malloc", uint64(len(code)))
		if err != nil || ptr == 0 || !p.in.memory().Write(uint32(ptr), code) {
			return 0, intObject{}, fmt.Errorf("no guest memory for the code (%v)", err)
		}
		if ret, err := callIn(p.in.ctx, p.in, "PyRun_SimpleString", ptr); err != nil || ret != 0 {
			return 0, intObject{}, fmt.Errorf("signal.signal(SIGINT, %s) failed (%d, %v)", name, int32(ret), err)
		}
		h := word()
		mem := p.in.memory()
		obj, ok := intObjectAt(h, uint64(mem.Size()), func(a uint32) uint32 { v, _ := mem.ReadUint32Le(a); return v })
		if !ok {
			return 0, intObject{}, fmt.Errorf("signal.signal(SIGINT, %s) stored %#x, not an object", name, h)
		}
		return h, obj, nil
	}
	if plan.ignore, plan.ignoreInt, err = handler("SIG_IGN"); err != nil {
		return err
	}
	if plan.dfl, plan.dflInt, err = handler("SIG_DFL"); err != nil {
		return err
	}
	if image == 0 || plan.ignore == image || plan.dfl == image || plan.ignore == plan.dfl ||
		plan.ignoreInt[0] == 0 || plan.ignoreInt[0] != plan.dflInt[0] || plan.ignoreInt == plan.dflInt {
		return fmt.Errorf("SIGINT's handler word at %#x held %#x, then %#x (SIG_IGN, %v), %#x (SIG_DFL, %v)", at, image, plan.ignore, plan.ignoreInt, plan.dfl, plan.dflInt)
	}
	return nil
}

// setBits lists the words of after that differ from before, each of
// which must differ by bits set, none cleared; after may be longer (the
// instance's memory past the image is not compared).
func setBits(before, after []byte) ([]signalWord, error) {
	var set []signalWord
	const chunk = 64 << 10
	for at := 0; at+4 <= len(before); at += chunk {
		end := min(at+chunk, len(before)) &^ 3
		if bytes.Equal(before[at:end], after[at:end]) {
			continue
		}
		for i := at; i < end; i += 4 {
			old, now := binary.LittleEndian.Uint32(before[i:]), binary.LittleEndian.Uint32(after[i:])
			if old == now {
				continue
			}
			if old&^now != 0 || len(set) == 8 {
				return nil, fmt.Errorf("the call wrote more than flags (word at %#x: %#x -> %#x)", i, old, now)
			}
			set = append(set, signalWord{addr: uint32(i), bits: now &^ old})
		}
	}
	return set, nil
}

// stopWatch is how the host reaches a running instance of the checked
// kind from other goroutines: its stop flag and the words its signals set.
// Every access holds mu, and release, before the instance's store (and
// with it both memories) is deleted, makes the rest do nothing.
type stopWatch struct {
	mu      sync.Mutex
	flag    *uint32        // the stop memory's first word
	mem     unsafe.Pointer // the guest's memory (it never moves: reserved whole)
	size    func() uint64  // how much of it is accessible now (it only grows)
	plan    *signalPlan
	raised  map[int32]bool // signals raised whose flag the guest may not have taken yet
	stopped atomic.Bool    // the flag was set
}

// watchStop arms in, an instance of the checked kind, for st's run (its
// stopWatch is in.stop): its interrupts are raised in its memory at once.
// Call it before the instance runs.
func (w *wtEngine) watchStop(in *wtInstance, st *runState) error {
	ex := in.inst.GetExport(in.store, fuel.StopMemoryName)
	if ex == nil || ex.Memory() == nil {
		return errors.New("wasmpy: the checked interpreter exports no stop memory")
	}
	flag := ex.Memory().UnsafeData(in.store)
	data := in.mem.UnsafeData(in.store)
	if len(flag) < 4 || len(data) < w.img.size {
		return errors.New("wasmpy: an instance's memory is smaller than its image")
	}
	sw := &stopWatch{flag: (*uint32)(unsafe.Pointer(&flag[0])), mem: unsafe.Pointer(&data[0]), plan: w.plan, raised: map[int32]bool{}}
	imageSize, ms := uint64(w.img.size), in.ms
	sw.size = func() uint64 { return max(imageSize, ms.size()) }
	in.stop = sw
	in.beforeDelete = append(in.beforeDelete, sw.release)
	st.intr.poke = func() {
		if st.intr.take() {
			sw.raise(sigint)
		}
	}
	return nil
}

// halt sets the stop flag: the guest traps at its next check.
func (sw *stopWatch) halt() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.flag != nil {
		sw.stopped.Store(true)
		atomic.StoreUint32(sw.flag, 1)
	}
}

// raise raises sig in the guest, as PyErr_SetInterruptEx does.
func (sw *stopWatch) raise(sig int32) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.mem == nil || sw.plan == nil {
		return
	}
	t, ok := sw.plan.tripped[sig]
	if !ok {
		return
	}
	if sw.ignored(atomic.LoadUint32(sw.word(t.addr + handlerOffset))) {
		return // the guest ignores it, or left it to the default (which WASI never delivers)
	}
	sw.or(t)
	for _, x := range sw.plan.shared {
		sw.or(x)
	}
	sw.raised[sig] = true
}

// again sets the shared words again for each signal raised whose flag
// the guest has not taken: the guest's own updates of its eval breaker
// are not atomic, and one may have overwritten the bit the host set.
// (Setting them when the guest has just taken the flag costs it one
// look at its signals, which finds none.)
func (sw *stopWatch) again() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.mem == nil {
		return
	}
	for sig := range sw.raised {
		t := sw.plan.tripped[sig]
		if atomic.LoadUint32(sw.word(t.addr))&t.bits == 0 {
			delete(sw.raised, sig) // taken
			continue
		}
		for _, x := range sw.plan.shared {
			sw.or(x)
		}
	}
}

// ignored reports whether h, a signal's handler, is SIG_IGN or SIG_DFL:
// one of their objects, or an int of the same value. The guest may be
// changing the handler meanwhile; reading a word of its memory is safe
// wherever it is inside, and the worst a torn read does is what a signal
// raised a moment earlier or later would have done.
func (sw *stopWatch) ignored(h uint32) bool {
	p := sw.plan
	if h == p.ignore || h == p.dfl {
		return true
	}
	obj, ok := intObjectAt(h, sw.size(), func(a uint32) uint32 { return atomic.LoadUint32(sw.word(a)) })
	return ok && (obj == p.ignoreInt || obj == p.dflInt)
}

func (sw *stopWatch) word(addr uint32) *uint32 { return (*uint32)(unsafe.Add(sw.mem, uintptr(addr))) }

func (sw *stopWatch) or(x signalWord) { atomic.OrUint32(sw.word(x.addr), x.bits) }

// quiesce ends the raising once the guest's call has returned, before
// anything reads its memory (a session's state): it takes back the flags
// of the signals raised that the guest did not take, so that a Ctrl-C or
// a flush that came as the run ended does not wait in the state for the
// next turn. (WASI delivers no signal of its own, and a guest's
// signal.raise_signal is handled before it returns: what is pending is
// the host's.) The watch writes nothing after.
func (sw *stopWatch) quiesce() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.mem == nil {
		return
	}
	taken := false
	for sig := range sw.raised {
		t := sw.plan.tripped[sig]
		if atomic.LoadUint32(sw.word(t.addr))&t.bits != 0 {
			atomic.AndUint32(sw.word(t.addr), ^t.bits)
			taken = true
		}
	}
	if taken {
		for _, x := range sw.plan.shared {
			atomic.AndUint32(sw.word(x.addr), ^x.bits)
		}
	}
	sw.mem = nil
}

// release makes the watch do nothing from now on: the memories are about
// to go.
func (sw *stopWatch) release() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.flag, sw.mem = nil, nil
}

// flushes has the running instances of a kind flush their stdout every
// flushTick, while any runs.
type flushes struct {
	mu      sync.Mutex
	running map[*stopWatch]bool
	stop    chan struct{}
}

// watch sets sw's flag once ctx is done and has its guest flush its stdout
// every tick until the returned function is called, once its call has
// returned.
func (f *flushes) watch(ctx context.Context, sw *stopWatch) func() {
	halt := context.AfterFunc(ctx, sw.halt)
	f.mu.Lock()
	if f.running == nil {
		f.running = map[*stopWatch]bool{}
	}
	f.running[sw] = true
	if len(f.running) == 1 {
		f.stop = make(chan struct{})
		go f.tick(f.stop)
	}
	f.mu.Unlock()
	return func() {
		halt()
		f.mu.Lock()
		delete(f.running, sw)
		if len(f.running) == 0 {
			close(f.stop)
		}
		f.mu.Unlock()
	}
}

func (f *flushes) tick(stop chan struct{}) {
	t := time.NewTicker(flushTick)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			f.mu.Lock()
			for sw := range f.running {
				sw.again()
				sw.raise(sigflush)
			}
			f.mu.Unlock()
		case <-stop:
			return
		}
	}
}
