//go:build wasmtime && cgo

package engine

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// setBits finds the words a signal sets and refuses a call that did more
// than set flags: a cleared bit, or more words than flags.
func TestSetBits(t *testing.T) {
	before := make([]byte, 200<<10)
	after := append([]byte(nil), before...)
	after[8], after[70<<10+1], after[199<<10] = 1, 2, 0x80
	set, err := setBits(before, append(after, 0xff)) // the memory past the image is not compared
	require.NoError(t, err)
	require.Equal(t, []signalWord{{8, 1}, {70 << 10, 0x200}, {199 << 10, 0x80}}, set)

	before[12], after[12] = 3, 1
	_, err = setBits(before, after)
	require.ErrorContains(t, err, "word at 0xc: 0x3 -> 0x1")

	after = make([]byte, len(before))
	copy(after, before)
	for i := range 9 {
		after[1000+4*i] = 1
	}
	_, err = setBits(before, after)
	require.ErrorContains(t, err, "more than flags")
}

// The plan the engine learnt from the image: two words shared by every
// signal, a flag of its own for each, and the SIG_IGN and SIG_DFL
// handlers told apart.
func TestSignalPlan(t *testing.T) {
	e := testEngineOn(t, Wasmtime, true)
	w, ok := e.alt.(*wtEngine)
	require.True(t, ok)
	p := w.plan
	require.Len(t, p.shared, 2)
	require.Len(t, p.tripped, 2)
	require.NotEqual(t, p.tripped[sigint].addr, p.tripped[sigflush].addr)
	require.NotZero(t, p.ignore)
	require.NotZero(t, p.dfl)
	t.Logf("shared %v, SIGINT %v, SIGUSR1 %v, SIG_IGN %#x, SIG_DFL %#x", p.shared, p.tripped[sigint], p.tripped[sigflush], p.ignore, p.dfl)
}

// The plan kept in the cache is read back as learnt, and one that is not
// this image's, or names a word outside it, is learnt again.
func TestSignalPlanCached(t *testing.T) {
	e := testEngineOn(t, Wasmtime, true)
	w := e.alt.(*wtEngine)
	path := w.signalsPath()
	require.NotEmpty(t, path)
	kept, err := readSignals(path, w.img)
	require.NoError(t, err)
	require.Equal(t, w.plan, kept)

	dir := t.TempDir()
	bad := filepath.Join(dir, "x.signals.json")
	var good signalsFile
	require.NoError(t, json.Unmarshal([]byte(mustRead(t, path)), &good))
	edited := func(edit func(f *signalsFile)) string {
		f := good
		f.Plan.Shared = slices.Clone(good.Plan.Shared)
		f.Plan.Tripped = maps.Clone(good.Plan.Tripped)
		edit(&f)
		b, err := json.Marshal(f)
		require.NoError(t, err)
		return string(b)
	}
	for _, body := range []string{
		"{",
		`{"image_size": 1, "run_code": 0, "plan": {}}`,
		edited(func(f *signalsFile) { f.Image++ }),
		edited(func(f *signalsFile) { f.Plan.Shared[0][0] = uint32(w.img.size) }),
		edited(func(f *signalsFile) { f.Plan.Tripped[sigflush] = [2]uint32{3, 1} }),
		edited(func(f *signalsFile) { delete(f.Plan.Tripped, sigint); f.Plan.Tripped[11] = [2]uint32{8, 1} }),
		edited(func(f *signalsFile) { f.Plan.IgnoreInt = intObject{} }), // kept before the ints were learnt
	} {
		require.NoError(t, os.WriteFile(bad, []byte(body), 0o644))
		_, err := readSignals(bad, w.img)
		require.Error(t, err, body)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// A handler is SIG_IGN when it is an int of SIG_IGN's value, whichever
// object: in sci, SIG_IGN (a function's table index) is past the small
// ints, and each signal.signal(sig, SIG_IGN) stores an int of its own.
func TestIgnoredHandlerByValue(t *testing.T) {
	mem := make([]uint32, 64)
	put := func(at uint32, obj intObject) { copy(mem[at/4+1:], obj[:]) }
	ign, dfl := intObject{0x5000, 8, 15171}, intObject{0x5000, 1, 0}
	put(16, ign)
	put(64, dfl)
	put(128, ign)                         // another int of SIG_IGN's value
	put(192, intObject{0x5000, 8, 15172}) // not SIG_IGN
	put(224, intObject{0x6000, 8, 15171}) // not an int
	sw := &stopWatch{mem: unsafe.Pointer(&mem[0]), size: func() uint64 { return 256 },
		plan: &signalPlan{ignore: 16, dfl: 64, ignoreInt: ign, dflInt: dfl}}
	for h, want := range map[uint32]bool{16: true, 64: true, 128: true, 192: false, 224: false, 250: false, 1 << 31: false, 130: false} {
		require.Equal(t, want, sw.ignored(h), "handler at %d", h)
	}
}

// Once the guest's call has returned, the signals it did not take are
// taken back (a session's state keeps no Ctrl-C for its next turn), those
// it took are left as the guest left them, and nothing is raised after.
func TestQuiesceTakesBackPendingSignals(t *testing.T) {
	mem := make([]uint32, 16)
	plan := &signalPlan{shared: []signalWord{{0, 1}, {4, 2}}, tripped: map[int32]signalWord{sigint: {8, 1}, sigflush: {12, 1}},
		ignoreInt: intObject{1, 2, 3}, dflInt: intObject{1, 1, 0}}
	mem[1] = 0x100          // another bit of the eval breaker, the guest's
	mem[3], mem[4] = 40, 44 // the handlers: words of no int
	sw := &stopWatch{mem: unsafe.Pointer(&mem[0]), size: func() uint64 { return 64 }, plan: plan, raised: map[int32]bool{}}
	sw.raise(sigint)
	require.Equal(t, []uint32{1, 0x102, 1}, mem[:3])
	sw.quiesce()
	require.Equal(t, []uint32{0, 0x100, 0}, mem[:3], "taken back, the guest's bit kept")
	sw.raise(sigflush)
	require.Zero(t, mem[3]&^40, "nothing raised once quiesced")

	mem[0], mem[1], mem[2] = 0, 0x100, 0
	sw = &stopWatch{mem: unsafe.Pointer(&mem[0]), size: func() uint64 { return 64 }, plan: plan, raised: map[int32]bool{}}
	sw.raise(sigint)
	mem[2], mem[0] = 0, 0 // the guest took it (its handler runs)
	sw.quiesce()
	require.Equal(t, []uint32{0, 0x102, 0}, mem[:3], "left as the guest left it")
}
