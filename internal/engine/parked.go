package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// maxMemory is the most a wasm32 memory can be: a parked instance reserves
// it, since the limit of the run it will serve is not known yet.
const maxMemory = 1 << 32

var (
	errDiscarded  = errors.New("wasmpy: parked instance discarded")
	errClosed     = errors.New("wasmpy: engine closed")
	errLeftToStop = errors.New("wasmpy: the stopped instance was left to end on its own")
)

// parked is an instance of the core build started ahead of its run: the
// image is laid over its memory, its hot pages are copied in, and its
// runner waits inside the _job host call. A run binds its job, streams and
// limits to it, lets it go on, and closes it afterwards; no instance serves
// two runs.
type parked struct {
	mod     api.Module
	mem     *memory
	st      *runState
	ctx     context.Context // the instance's: e.alive's, with its state
	cancel  context.CancelCauseFunc
	runCode uint32        // the runner's entry in the image
	started bool          // launch has run (or close, for one never started)
	done    chan struct{} // closed when the runner's PyRun_SimpleString returns
	err     error         // what it returned
	ret     int32         // and its result: 0 when the runner ended normally

	lingering *sync.WaitGroup // the engine's instances not yet closed
}

type parkResult struct {
	p   *parked
	err error
}

// parkNext starts parking the instance for the next run.
func (e *Engine) parkNext() chan parkResult {
	next := make(chan parkResult, 1)
	go func() {
		p, err := e.park()
		next <- parkResult{p, err}
	}()
	return next
}

// parked takes the instance parked (or being parked) for this run and
// starts parking the next one, so a run waits for at most one instance
// however many arrive together.
func (e *Engine) parked() (*parked, error) {
	e.nextMu.Lock()
	next := e.next
	if next != nil {
		e.next = e.parkNext()
	}
	e.nextMu.Unlock()
	if next == nil {
		return nil, errClosed
	}
	r := <-next
	return r.p, r.err
}

// sessionInstance lays from over the blank instance made ahead by the turn
// before (the first turn from a state makes its own), and makes the next
// one ahead. No guest code runs: the runner of an instance whose memory
// the guest left starts inside the turn that takes it, under that turn's
// limits (see parked.run).
func (e *Engine) sessionInstance(from *State) (*parked, error) {
	e.nextMu.Lock()
	spare := e.spare
	if e.next != nil { // not closing
		e.spare = make(chan blankResult, 1)
		go func(c chan blankResult) {
			b, err := e.instantiate()
			c <- blankResult{b, err}
		}(e.spare)
	}
	e.nextMu.Unlock()
	var b *blank
	if spare != nil {
		if r := <-spare; r.err == nil {
			b = r.b
		}
	}
	if b == nil {
		var err error
		if b, err = e.instantiate(); err != nil {
			return nil, err
		}
	}
	return e.lay(b, from)
}

type blankResult struct {
	b   *blank
	err error
}

// stopParking discards the instance parked for a run that will not come.
func (e *Engine) stopParking() {
	e.nextMu.Lock()
	next, spare := e.next, e.spare
	e.next, e.spare = nil, nil
	e.nextMu.Unlock()
	if next != nil {
		if r := <-next; r.p != nil {
			r.p.close()
		}
	}
	if spare != nil {
		if r := <-spare; r.b != nil {
			r.b.close()
		}
	}
}

// blank is an instance made ahead whose memory holds neither the image nor
// a state yet: a session's turn takes one, so that it does not pay for
// instantiation (see sessionInstance).
type blank struct {
	m      api.Module
	mem    *memory
	st     *runState
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func (e *Engine) instantiate() (*blank, error) {
	st := newRunState(e.newMeter())
	mem := &memory{limit: maxMemory, image: e.image}
	ctx, cancel := context.WithCancelCause(context.WithValue(e.alive, stateKey{}, st))
	m, err := e.rt.InstantiateModule(experimental.WithMemoryAllocator(ctx, mem), e.mod, e.moduleConfig(st))
	if err != nil {
		cancel(err)
		return nil, fmt.Errorf("wasmpy: instantiate: %w", err)
	}
	return &blank{m: m, mem: mem, st: st, ctx: ctx, cancel: cancel}, nil
}

func (b *blank) close() {
	b.cancel(errDiscarded)
	b.m.Close(context.Background())
}

// park starts an instance from the image and its runner, which waits for
// its job. The image is the host's (its interpreter, package sets and
// preloads), not a guest's, but what its preloads left may still run at
// the runner's start: that start is bounded by parkFuel and parkMemory,
// and an instance that passes them is discarded with an error.
func (e *Engine) park() (*parked, error) {
	b, err := e.instantiate()
	if err != nil {
		return nil, err
	}
	p, err := e.lay(b, nil)
	if err != nil {
		return nil, err
	}
	p.mem.limit = uint64(e.image.size) + parkMemory
	p.st.meter.start(p.mod, parkFuel) // the runner's start is not the run's
	p.launch(e.image.runCode)
	select {
	case <-p.st.waiting:
		return p, nil
	case <-p.done:
		p.close()
		why := fmt.Sprint(p.err)
		if p.st.meter.exhausted() {
			why = fmt.Sprintf("it ran past %d units of fuel (a preloaded module's code?)", parkFuel)
		} else if p.mem.refused.Load() {
			why = fmt.Sprintf("it needed more than %s of memory over the image", sizeText(parkMemory))
		}
		return nil, fmt.Errorf("wasmpy: start instance: the runner ended before asking for its job: %s", why)
	}
}

// What an instance started from the image may spend before it waits for
// its job: about a second of CPython, and memory over the image's.
const (
	parkFuel   = 1 << 28
	parkMemory = 64 << 20
)

// lay lays the image over b's memory, with from's pages over it when from
// is not nil: the host's work only, no guest code runs. The instance's
// runner starts with launch.
func (e *Engine) lay(b *blank, from *State) (*parked, error) {
	m, mem, st, ctx, cancel := b.m, b.mem, b.st, b.ctx, b.cancel
	fail := func(err error) (*parked, error) {
		b.close()
		return nil, fmt.Errorf("wasmpy: start instance: %w", err)
	}
	lm := m.Memory()
	size := uint64(e.image.size)
	if from != nil {
		size = max(size, from.size)
	}
	if cur := uint64(lm.Size()); size > cur {
		if _, ok := lm.Grow(uint32((size - cur) / 65536)); !ok {
			return fail(errors.New("memory for the image refused"))
		}
	}
	if err := mem.restore(); err != nil {
		return fail(err)
	}
	if mem.mapping != nil {
		prefault(e.image, mem.mapping)
	}
	if from != nil {
		if err := from.apply(mem); err != nil {
			return fail(err)
		}
	}
	st.intr.in, st.intr.ctx = wazeroInstance{m}, ctx
	e.lingering.Add(1) // Done once close has closed it
	return &parked{mod: m, mem: mem, st: st, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		runCode: e.image.runCode, lingering: &e.lingering}, nil
}

// launch starts p's runner: PyRun_SimpleString of the image's entry, in a
// goroutine; done is closed when it returns.
func (p *parked) launch(runCode uint32) {
	p.started = true
	go func() {
		var r uint64
		r, p.err = call(p.ctx, p.mod, "PyRun_SimpleString", uint64(runCode))
		p.ret = int32(r)
		p.st.meter.stop()
		close(p.done)
	}()
}

// run lets p run the job bound to p.st, with a fuel budget, and waits for
// it to end; the run's ctx reaches the instance through p.cancel. An
// instance laid from a session's state starts its runner here, inside the
// run: whatever the guest left in that state runs under the run's context,
// deadline (the meter's, set before), fuel and memory limit, never before.
func (p *parked) run(ctx context.Context, limit uint64, budget int64) error {
	p.mem.limit = limit
	if size := uint64(len(p.mem.buf)); size > limit {
		p.mem.refused.Store(true)
		return fmt.Errorf("the interpreter needs %d bytes of memory at start", size)
	}
	stop := context.AfterFunc(ctx, func() { p.cancel(context.Cause(ctx)) })
	defer stop()
	if p.started {
		p.st.meter.reset(budget)
	} else {
		p.st.meter.start(p.mod, budget)
		p.launch(p.runCode)
	}
	close(p.st.ready)
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
	}
	// Stopped: the instance ends at its next refuel, host call or sleep,
	// within a fuel slice of its own time. On a loaded host its thread may
	// wait far longer for a CPU; the run does not wait for it past
	// stopGrace, since nothing it does now reaches the world (host calls
	// refuse it, its output is sealed).
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	select {
	case <-p.done:
		return p.err
	case <-grace.C:
		return errLeftToStop
	}
}

// stopGrace is how long a stopped run waits for its instance to unwind.
const stopGrace = 10 * time.Millisecond

// close stops the instance and releases it off the run's path, once its
// call has returned: unmapping its memory takes as long as a small run. One
// never let go finds its _job call refused.
func (p *parked) close() {
	p.cancel(errDiscarded)
	if !p.started { // no runner: nothing to wait for
		p.started = true
		close(p.done)
	}
	go func() {
		defer p.lingering.Done()
		<-p.done
		p.mod.Close(context.Background())
	}()
}

// learnHotPages runs print(1) in a parked instance and notes the pages of
// the image it wrote, for later instances to copy ahead.
func (e *Engine) learnHotPages() []pageRun {
	p, err := e.park()
	if err != nil {
		return nil
	}
	defer p.close()
	j, _ := json.Marshal(job{Filename: "<string>", Argv: []string{"<string>"}})
	p.st.bind(context.Background(), &Run{Code: "print(1)"}, j, io.Discard, io.Discard)
	if err := p.run(context.Background(), DefaultMemoryLimit, math.MaxInt64); err != nil || p.mem.mapping == nil {
		return nil
	}
	hot, _ := writtenPages(p.mem.mapping, e.image.size/pageSize)
	return hot
}
