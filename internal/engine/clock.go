package engine

import (
	"context"
	"encoding/binary"
	"math"
	"sync"
	"time"
)

// clock is the time a guest sees. A deterministic clock starts at a fixed
// date and advances 1µs per reading plus whatever the guest sleeps, so
// metered runs do not depend on the host's time.
type clock struct {
	mu            sync.Mutex
	deterministic bool
	start         time.Time
	fake          int64 // ns since fakeEpoch, deterministic only
}

// fakeEpoch is 2024-01-01T00:00:00Z.
const fakeEpoch = int64(1704067200) * int64(time.Second)

func newClock(deterministic bool) *clock {
	return &clock{deterministic: deterministic, start: time.Now()}
}

func (c *clock) walltime() (int64, int32) {
	ns := c.wallNanos()
	return ns / 1e9, int32(ns % 1e9)
}

func (c *clock) wallNanos() int64 {
	if c.deterministic {
		return fakeEpoch + c.tick()
	}
	return time.Now().UnixNano()
}

func (c *clock) nanotime() int64 {
	if c.deterministic {
		return c.tick()
	}
	return int64(time.Since(c.start))
}

func (c *clock) tick() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fake += int64(time.Microsecond)
	return c.fake
}

// sleep waits d or until ctx is done or wake fires, whichever comes first.
func (c *clock) sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) {
	if c.deterministic {
		c.mu.Lock()
		c.fake += int64(d)
		c.mu.Unlock()
	}
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	case <-wake:
	}
}

// WASI preview1 constants and layouts used by poll_oneoff.
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoFault   = 21
	errnoInval   = 28

	eventClock   = 0
	eventFdRead  = 1
	eventFdWrite = 2

	clockRealtime  = 0
	clockMonotonic = 1
	subAbstime     = 1

	subscriptionSize = 48
	eventSize        = 32
	// maxSubscriptions bounds one poll: the guest's three streams and a few
	// timers need far fewer.
	maxSubscriptions = 1024
)

// pollOneoff replaces WASI's poll_oneoff. Unlike wazero's, it accepts
// absolute clock deadlines (CPython's clock_nanosleep(TIMER_ABSTIME)) and
// its sleep ends as soon as the run's context is done. The guest's only
// descriptors are its three memory-backed streams, which are always ready.
func pollOneoff(ctx context.Context, in instance, stack []uint64) {
	subs, out, n, resultPtr := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
	if n == 0 { // the instrumented code asking for fuel (see refuelImport)
		if st := stateFrom(ctx); st != nil {
			flushDue := st.meter.refuel(ctx, st.intr.flush)
			st.intr.deliver()
			if flushDue {
				st.intr.flush()
			}
		}
		stack[0] = errnoInval // a refuel has decided already
		return
	}
	stack[0] = pollOneoffErrno(ctx, in.memory(), subs, out, n, resultPtr)
	stopIfDone(ctx) // a sleep cut short by the deadline does not return
}

func pollOneoffErrno(ctx context.Context, mem guestMemory, in, out, n, resultPtr uint32) uint64 {
	// Sizes in uint64: n*48 overflows uint32 long before it passes the
	// memory. Events are written in place.
	size := uint64(mem.Size())
	if uint64(in)+uint64(n)*subscriptionSize > size || uint64(out)+uint64(n)*eventSize > size {
		return errnoFault
	}
	if n > maxSubscriptions {
		return errnoInval
	}
	subs, _ := mem.Read(in, n*subscriptionSize)
	events, _ := mem.Read(out, n*eventSize)
	sub := func(i uint32) []byte { return subs[i*subscriptionSize : (i+1)*subscriptionSize] }
	// The first pass finds how long to sleep: not at all when an fd event
	// or a bad clock is ready, else until the earliest timer.
	clk := clockFrom(ctx)
	ready, fire := false, time.Duration(math.MaxInt64)
	timeout := func(s []byte) (time.Duration, bool) {
		d := int64(binary.LittleEndian.Uint64(s[24:]))
		if binary.LittleEndian.Uint16(s[40:])&subAbstime != 0 {
			switch binary.LittleEndian.Uint32(s[16:]) {
			case clockRealtime:
				d -= clk.wallNanos()
			case clockMonotonic:
				d -= clk.nanotime()
			default:
				return 0, false
			}
		}
		return time.Duration(d), true
	}
	type timer struct {
		d  time.Duration
		ok bool // a clock this poll knows
	}
	timers := make([]timer, n)
	sleep := false
	for i := range n {
		s := sub(i)
		if s[8] != eventClock {
			ready = true
			continue
		}
		d, ok := timeout(s)
		timers[i] = timer{d, ok}
		if !ok {
			ready = true
			continue
		}
		sleep, fire = true, min(fire, d)
	}
	switch {
	case ready: // only timers already past fire
		fire = 0
	case sleep:
		if st := stateFrom(ctx); st != nil {
			clk.sleep(ctx, fire, st.intr.wake)
			st.intr.deliver() // CPython checks for it as the sleep returns
		} else {
			clk.sleep(ctx, fire, nil)
		}
	}
	// The second pass writes an event for each subscription that is ready
	// (a guest that overlaps its events with its subscriptions reads back
	// what it asked for).
	count := uint32(0)
	for i := range n {
		s := sub(i)
		typ, errno := s[8], uint16(errnoSuccess)
		switch typ {
		case eventClock:
			if t := timers[i]; !t.ok {
				errno = errnoInval
			} else if t.d > fire {
				continue // not yet fired
			}
		case eventFdRead, eventFdWrite:
			if fd := binary.LittleEndian.Uint32(s[16:]); fd > 2 {
				errno = errnoBadf
			}
		default:
			errno = errnoInval
		}
		ev := events[count*eventSize : (count+1)*eventSize]
		clear(ev)
		copy(ev[0:8], s[0:8]) // userdata
		binary.LittleEndian.PutUint16(ev[8:], errno)
		ev[10] = typ
		count++
	}
	if !mem.WriteUint32Le(resultPtr, count) {
		return errnoFault
	}
	return errnoSuccess
}
