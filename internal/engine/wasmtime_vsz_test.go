//go:build wasmtime && cgo && linux

package engine

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// vmKiB reads a field of /proc/self/status, in KiB.
func vmKiB(t *testing.T, field string) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == field+":" {
			n, err := strconv.ParseUint(f[1], 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// Every wasmtime instance reserves its memory's whole address space (4 GiB
// and a 32 MiB guard, PROT_NONE: no RSS, no commit charge), which is what
// lets Cranelift leave out bounds checks. What bounds the process's
// address space is that instances end: after many runs, with and without
// a fuel budget, and sessions' turns, the process holds about what it held
// before (the instances parked ahead, one per kind), not one reservation
// per run.
func TestWasmtimeAddressSpaceBounded(t *testing.T) {
	e := testEngineOn(t, Wasmtime, true)
	runOn(t, e, &Run{Code: "print(1)"})
	runOn(t, e, &Run{Code: "print(1)", Fuel: 1 << 40}) // both kinds parked
	settle := func() (vsz, rss uint64) {
		time.Sleep(200 * time.Millisecond) // stopped instances close in the background
		return vmKiB(t, "VmSize"), vmKiB(t, "VmRSS")
	}
	vsz0, rss0 := settle()
	var from *State
	for i := range 30 {
		r := &Run{Code: "x = bytearray(8 << 20)\nprint(len(x))"}
		switch i % 3 {
		case 1:
			r.Fuel = 1 << 40
		case 2:
			r.Session, r.From = true, from
		}
		out := runOn(t, e, r)
		require.Nil(t, out.Failure, string(out.Stderr))
		if out.State != nil {
			from = out.State
		}
	}
	vsz, rss := settle()
	const reservation = (4<<30 + 32<<20) >> 10
	t.Logf("VmSize %d -> %d MiB, VmRSS %d -> %d MiB over 30 runs", vsz0>>10, vsz>>10, rss0>>10, rss>>10)
	require.Less(t, int64(vsz)-int64(vsz0), int64(reservation), "address space left behind by 30 runs")
	require.Less(t, int64(rss)-int64(rss0), int64(64<<10), "RSS left behind by 30 runs (KiB)")
}

// An instance of the free kind has two memories, the guest's and the stop
// flag's (wasmtime_stop.go), but reserves the 4 GiB once: the stop memory
// holds its one page and the guard.
func TestWasmtimeStopMemoryReservesItsPage(t *testing.T) {
	e := testEngineOn(t, Wasmtime, true)
	w := e.alt.(*wtEngine)
	const reservation = (4<<30 + 32<<20) >> 10
	before := vmKiB(t, "VmSize")
	var ps []*wtParked
	for range 4 {
		p, err := w.blank(w.free, newRunState(nil), DefaultMemoryLimit, nil)
		require.NoError(t, err)
		require.NotNil(t, p.in.stop, "a free instance has its stop flag")
		ps = append(ps, p)
	}
	grown := int64(vmKiB(t, "VmSize")) - int64(before)
	for _, p := range ps {
		p.cancel(errDiscarded)
		p.in.close()
	}
	t.Logf("4 free instances: VmSize +%d MiB", grown>>10)
	require.Less(t, grown, int64(4*reservation+4*(64<<10)), "more than one reservation per instance")
}
