package engine

import (
	"context"
	"sync/atomic"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// interruptExport is the core build's PyErr_SetInterruptEx. Called with
// SIGINT, it makes the guest raise KeyboardInterrupt at its next bytecode
// boundary, as a real SIGINT does in python3. It is async-signal-safe, so
// the host may call it from within any host call the guest is making.
const interruptExport = "PyErr_SetInterruptEx"

const (
	sigint = 2
	// sigflush is the signal whose handler flushes the guest's stdout
	// (SIGUSR1; see pyhost's runner). The guest's stdout is block-buffered;
	// the host has it flushed every flushPeriod units of fuel (see meter),
	// and before the guest blocks reading stdin, so its output still
	// streams as it computes and shows before it waits. (A sleep cannot
	// fail with EINTR in wasi-libc: the runner flushes before time.sleep.)
	sigflush = 10
)

// interrupter carries interrupts from the goroutine that raises them to
// the guest's, which delivers them: at its next refuel (within about a
// millisecond of compute), or at once when it waits for stdin or sleeps.
type interrupter struct {
	pending atomic.Bool
	wake    chan struct{}
	in      instance        // the instance, once started
	ctx     context.Context // its call's: a call back into it needs the run's state
	// stop ends the run instead, for an interpreter that cannot raise
	// KeyboardInterrupt (the npm build exports no PyErr_SetInterruptEx).
	stop func()
	// poke, when set (before the run), raises a pending interrupt in an
	// instance that counts no fuel, from the goroutine that raised it:
	// wasmtime's free kind writes it into the guest's memory as a native
	// signal would (wasmtime_stop.go).
	poke func()

	// On the guest's goroutine only: whether the guest was just sent back
	// to flush before blocking.
	flushed bool
	fn      exportFunc // the instance's interruptExport, once looked up
}

// export is the instance's interruptExport, or nil; looking it up each
// time would allocate, at every flush.
func (i *interrupter) export() exportFunc {
	if i.fn == nil && i.in != nil {
		i.fn = i.in.export(interruptExport)
	}
	return i.fn
}

func newInterrupter() interrupter { return interrupter{wake: make(chan struct{}, 1), stop: func() {}} }

// raise asks for a KeyboardInterrupt; any goroutine may call it.
func (i *interrupter) raise() {
	i.pending.Store(true)
	if i.poke != nil {
		i.poke()
	}
	select {
	case i.wake <- struct{}{}:
	default:
	}
}

// deliver raises a pending interrupt in the guest. Call it only on the
// guest's goroutine, from a host call, with no lock held: the call back
// into the guest may itself come back for fuel.
func (i *interrupter) deliver() {
	if i.in == nil || !i.take() {
		return
	}
	fn := i.export()
	if fn == nil {
		i.stop()
		return
	}
	_, _ = fn(i.ctx, sigint) // fails only for a bad signal number
}

// take takes a pending interrupt, if any, for its caller to raise.
func (i *interrupter) take() bool {
	if !i.pending.CompareAndSwap(true, false) {
		return false
	}
	select { // the wake that came with it must not cut a later sleep short
	case <-i.wake:
	default:
	}
	return true
}

// flush has the guest flush its stdout at its next bytecode boundary.
// Call it as deliver.
func (i *interrupter) flush() {
	if fn := i.export(); fn != nil {
		_, _ = fn(i.ctx, sigflush)
	}
}

// flushFirst, before the guest blocks, has it flush its stdout and
// reports true: the blocking call then fails with EINTR, on which CPython
// runs the flush and calls again. The second call blocks (false).
func (i *interrupter) flushFirst() bool {
	if i.flushed || i.export() == nil {
		i.flushed = false
		return false
	}
	i.flushed = true
	i.flush()
	return true
}

// readStdin serves the guest's reads of stdin; an interrupt while it waits
// is raised at once, and the read fails with EINTR, on which CPython checks
// for it.
func (st *runState) readStdin(p []byte) (int, error) {
	if st.intr.flushFirst() {
		return 0, experimentalsys.EINTR
	}
	n, err := st.stdin.read(p, st.ctx.Done(), st.intr.wake)
	st.intr.deliver()
	return n, err
}
