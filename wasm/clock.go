package wasm

import (
	"context"
	"encoding/binary"
	"sync"
	"time"

	"github.com/tetratelabs/wazero/api"
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

// sleep waits d or until ctx is done, whichever comes first.
func (c *clock) sleep(ctx context.Context, d time.Duration) {
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
)

// pollOneoff replaces WASI's poll_oneoff. Unlike wazero's, it accepts
// absolute clock deadlines (CPython's clock_nanosleep(TIMER_ABSTIME)) and
// its sleep ends as soon as the run's context is done. The guest's only
// descriptors are its three memory-backed streams, which are always ready.
func pollOneoff(ctx context.Context, mod api.Module, stack []uint64) {
	in, out, n, resultPtr := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
	stack[0] = pollOneoffErrno(ctx, mod, in, out, n, resultPtr)
	stopIfDone(ctx) // a sleep cut short by the deadline does not return
}

func pollOneoffErrno(ctx context.Context, mod api.Module, in, out, n, resultPtr uint32) uint64 {
	if n == 0 { // the instrumented code asking for fuel (see refuelImport)
		if st := stateFrom(ctx); st != nil {
			st.meter.refuel(ctx)
		}
		return errnoInval
	}
	mem := mod.Memory()
	subs, ok := mem.Read(in, n*subscriptionSize)
	if !ok || uint64(out)+uint64(n)*eventSize > uint64(mem.Size()) {
		return errnoFault
	}
	clk := clockFrom(ctx)
	events := make([]byte, 0, n*eventSize)
	addEvent := func(sub []byte, typ byte, errno uint16) {
		var ev [eventSize]byte
		copy(ev[0:8], sub[0:8]) // userdata
		binary.LittleEndian.PutUint16(ev[8:], errno)
		ev[10] = typ
		events = append(events, ev[:]...)
	}
	type timer struct {
		sub []byte
		d   time.Duration
	}
	var timers []timer
	for i := uint32(0); i < n; i++ {
		sub := subs[i*subscriptionSize : (i+1)*subscriptionSize]
		switch sub[8] {
		case eventClock:
			id := binary.LittleEndian.Uint32(sub[16:])
			d := int64(binary.LittleEndian.Uint64(sub[24:]))
			if binary.LittleEndian.Uint16(sub[40:])&subAbstime != 0 {
				switch id {
				case clockRealtime:
					d -= clk.wallNanos()
				case clockMonotonic:
					d -= clk.nanotime()
				default:
					addEvent(sub, eventClock, errnoInval)
					continue
				}
			}
			timers = append(timers, timer{sub, time.Duration(d)})
		case eventFdRead, eventFdWrite:
			errno := uint16(errnoSuccess)
			if fd := binary.LittleEndian.Uint32(sub[16:]); fd > 2 {
				errno = errnoBadf
			}
			addEvent(sub, sub[8], errno)
		default:
			addEvent(sub, sub[8], errnoInval)
		}
	}
	if len(timers) > 0 {
		// Sleep only when nothing is ready; then the earliest timers fire.
		var fire time.Duration
		if len(events) == 0 {
			fire = timers[0].d
			for _, t := range timers[1:] {
				fire = min(fire, t.d)
			}
			clk.sleep(ctx, fire)
		}
		for _, t := range timers {
			if t.d <= fire {
				addEvent(t.sub, eventClock, errnoSuccess)
			}
		}
	}
	if !mem.Write(out, events) || !mem.WriteUint32Le(resultPtr, uint32(len(events)/eventSize)) {
		return errnoFault
	}
	return errnoSuccess
}
