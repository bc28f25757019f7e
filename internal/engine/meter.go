package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/wasmpy/wasmpy/internal/fuel"
)

// meter hands an instance its fuel budget in slices and counts what it
// spends. A nil meter (an unmetered engine) measures nothing. The guest has
// no way to reach the counter: it is a wasm global, invisible to the code
// it runs, and only ever decremented.
//
// When a slice runs out, the instrumented code calls refuel (through
// poll_oneoff, see refuelImport), which is also where a run whose context
// is done stops. This replaces wazero's close on context done, whose check
// at every function entry and loop header leaves the compiled code for Go
// and more than doubled the time of CPU-bound code; the refuel call is the
// point where the Go runtime can preempt the goroutine instead.
type meter struct {
	counter counter // the instance's fuel global

	mu     sync.Mutex
	budget int64 // the run's whole budget
	spent  int64 // paid for by the slices settled so far
	given  int64 // what the counter held when last set or settled
	out    bool  // the budget ran out
	graced bool  // the instance has had its last slice, to flush

	// slice is how much fuel the instance gets at a time (fuelSlice
	// unless its engine sets another: wasmtimeSlice).
	slice int64
	// flushAt is where (in fuel spent) the guest's stdout is next to be
	// flushed: every flushPeriod units, whatever the slices, so the
	// flushes (guest code, which uses fuel) come at the same points on
	// every engine.
	flushAt int64

	// deadline, when set, is checked against the clock at every refuel,
	// and expire ends the run's context when it has passed. The check does
	// not wait for the context's timer, whose goroutine may wait for a
	// processor while every one runs wasm: that is how a loaded host once
	// stopped runs a second and more late.
	deadline time.Time
	expire   func()
}

// fuelSlice is how much fuel an instance gets at a time: about a
// millisecond of CPython under wazero, so a done context stops it that
// soon, and a garbage collection waits for it no longer.
const fuelSlice = 1 << 18

// wasmtimeSlice is the slice under wasmtime, also about a millisecond
// there. Its code runs in a cgo call, which holds up no garbage
// collection, and each refuel is a call back into Go that costs several
// microseconds once the Go runtime has handed the thread's processor to
// another: with fuelSlice, refuelling was 7-8% of json_loads' CPU time
// (BENCHMARKS.md).
const wasmtimeSlice = 1 << 21

// flushPeriod is how much fuel the guest spends between two flushes of
// its stdout (see interrupter): about 15 ms of CPython under wazero, 4
// under wasmtime.
const flushPeriod = 1 << 23

// refuelImport is the import the instrumented code calls for more fuel:
// poll_oneoff with no subscriptions, which WASI defines as an error, so no
// other caller relies on it (ours still answers EINVAL after refuelling).
var refuelImport = fuel.Refuel{Module: "wasi_snapshot_preview1", Name: "poll_oneoff"}

var (
	errFuel    = errors.New("wasmpy: out of fuel")
	errStopped = errors.New("wasmpy: run stopped")
)

// start gives mod's meter its first slice; mod must not be running.
func (m *meter) start(mod api.Module, budget int64) {
	if m == nil {
		return
	}
	if g, ok := mod.ExportedGlobal(fuel.GlobalName).(api.MutableGlobal); ok {
		m.startCounter(g, budget)
	}
}

// startCounter gives the meter of the instance whose fuel global is c its
// first slice; the instance must not be running.
func (m *meter) startCounter(c counter, budget int64) {
	if m == nil || c == nil {
		return
	}
	m.counter = c
	m.reset(budget)
}

// reset starts counting a new budget, for an instance waiting in a host call.
func (m *meter) reset(budget int64) {
	if m == nil || m.counter == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.budget, m.spent, m.out, m.graced = budget, 0, false, false
	m.flushAt = flushPeriod
	m.give()
}

// give sets the next slice; it ends at the next flush point, if sooner,
// so that the refuel that flushes comes at the same point whatever the
// slice.
func (m *meter) give() {
	m.given = min(m.sliceSize(), m.budget-m.spent, m.flushAt-m.spent)
	m.counter.Set(uint64(m.given))
}

func (m *meter) sliceSize() int64 {
	if m.slice > 0 {
		return m.slice
	}
	return fuelSlice
}

func (m *meter) settle() {
	left := int64(m.counter.Get())
	m.spent += m.given - left
	m.given = left
}

// refuel runs when the instance has spent its slice: it stops the instance
// (by panicking, which wazero turns into the call's error) if its budget
// is spent or ctx is done, and gives it the next slice otherwise. Before
// it stops an instance it gives it one last slice, once, and calls flush,
// so that what the guest printed last reaches its output (which the
// used fuel does not count). It reports whether the fuel spent has passed
// a flush point: the guest's stdout is then to be flushed.
func (m *meter) refuel(ctx context.Context, flush func()) (flushDue bool) {
	if m == nil || m.counter == nil {
		return false
	}
	m.mu.Lock()
	m.settle()
	if m.spent >= m.flushAt {
		flushDue = true
		m.flushAt = m.spent + flushPeriod
	}
	var stop error
	switch {
	case m.spent > m.budget:
		m.out, stop = true, errFuel
	case !m.deadline.IsZero() && !time.Now().Before(m.deadline):
		m.expire()
		stop = errStopped
	case ctx.Err() != nil:
		stop = errStopped
	}
	if stop == nil {
		m.give()
		m.mu.Unlock()
		return flushDue
	}
	if m.graced {
		m.mu.Unlock()
		panic(stop)
	}
	m.graced = true
	// The last slice is the same on every engine: the guest runs on in it
	// (its flush, and its own code until the slice is spent), and what it
	// prints then must not depend on the engine.
	m.given = fuelSlice
	m.counter.Set(fuelSlice)
	m.mu.Unlock()
	flush() // calls into the guest, which may come back for fuel
	return flushDue
}

// stopIfDone ends the guest's call once its context is done, or its meter
// has given it its last slice. Refuel, the host calls and poll_oneoff call
// it: a run past its deadline or budget gets no further capability, sleep
// or slice.
func stopIfDone(ctx context.Context) {
	if ctx.Err() != nil {
		panic(errStopped)
	}
	if st := stateFrom(ctx); st != nil && st.meter.lastSlice() {
		panic(errStopped)
	}
}

// lastSlice reports whether the instance is on its last slice.
func (m *meter) lastSlice() bool {
	if m == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.graced
}

// until makes refuel stop the instance once deadline has passed, calling
// expire first.
func (m *meter) until(deadline time.Time, expire func()) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.deadline, m.expire = deadline, expire
}

// stop settles the count; call it once the instance's call has returned.
func (m *meter) stop() {
	if m == nil || m.counter == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.settle()
}

// used is the fuel spent: the whole budget when it ran out.
func (m *meter) used() uint64 {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return uint64(min(m.spent, m.budget))
}

func (m *meter) exhausted() bool {
	if m == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.out
}
