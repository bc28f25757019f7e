package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// The engines that can run the interpreter. Wazero (pure Go) is in every
// build and the default; wasmtime (Cranelift, through cgo) only in a
// binary built with the wasmtime build tag.
const (
	Wazero   = "wazero"
	Wasmtime = "wasmtime"
)

// ErrNoWasmtime is New's error for Config.Engine wasmtime in a binary built
// without it.
var ErrNoWasmtime = errors.New("wasmpy: this binary has no wasmtime engine: build it with `go build -tags wasmtime` (cgo and a C compiler needed), or use --engine wazero")

// Engines lists the engines this binary can run, the default first.
func Engines() []string {
	if newWasmtime == nil {
		return []string{Wazero}
	}
	return []string{Wazero, Wasmtime}
}

// CheckEngine reports an engine name this binary cannot run: one it does
// not know, or wasmtime in a binary built without it. "" is the default.
func CheckEngine(name string) error {
	switch {
	case name == "" || slices.Contains(Engines(), name):
		return nil
	case name == Wasmtime:
		return ErrNoWasmtime
	}
	return fmt.Errorf("wasmpy: unknown engine %q (this binary has: %s)", name, joinNames(Engines()))
}

func joinNames(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

// newWasmtime makes the wasmtime half of an Engine; the wasmtime build tag
// sets it (see wasmtime.go), and it stays nil without.
var newWasmtime func(ctx context.Context, e *Engine, cfg Config) (altEngine, error)

// altEngine is an engine other than wazero behind Engine: it compiles and
// caches the prepared interpreter, makes the image, and runs a job in a
// fresh instance of its own. Everything else is shared: the job, the run's
// state (streams, clock, random, file systems, host calls), the meter, the
// host functions and how an outcome is classified.
type altEngine interface {
	// next is the state of the instance the next run gets, for the run to
	// bind before calling run: one made ahead where the engine can, or,
	// for a session's turn from a state (from not nil), a fresh one with
	// from's pages laid over the image and limit as its memory limit, whose
	// runner starts only inside run. metered asks for an instance that
	// counts fuel (a run with a fuel budget); without, the engine may run
	// one that counts none, and the run reports no fuel used.
	next(from *State, limit uint64, metered bool) (*runState, error)
	// run runs the job bound to st (from next) in its fresh instance, with
	// the memory limit and fuel budget, and returns the memory it used and
	// the error the instance's call ended with (a trap, an exit, a stop).
	// It closes st.ready, letting the runner take its job. With hold, the
	// instance's memory stays readable in altRun.mem (buf, and mapping
	// where the image is mapped) until release, for a session's capture.
	run(ctx context.Context, st *runState, memLimit uint64, budget int64, hold bool) (altRun, error)
	close() error
}

// altRun is what an altEngine's run leaves.
type altRun struct {
	mem     *memory
	ret     int32  // the runner's PyRun_SimpleString result: 0 when it ended normally
	release func() // lets a held instance go; always set
}

// instance is one instance of the interpreter as the shared code needs it,
// whichever engine runs it.
type instance interface {
	// export is the exported function name, or nil when there is none.
	export(name string) exportFunc
	// memory is the instance's linear memory.
	memory() guestMemory
}

// exportFunc calls an export of the instance with i32/i64 arguments and
// returns its first result (0 for none).
type exportFunc func(ctx context.Context, args ...uint64) (uint64, error)

// guestMemory is an instance's linear memory. Reads return views of the
// memory (valid until it grows), as wazero's api.Memory does, which
// satisfies it.
type guestMemory interface {
	Size() uint32
	Read(offset, n uint32) ([]byte, bool)
	Write(offset uint32, b []byte) bool
	ReadUint32Le(offset uint32) (uint32, bool)
	WriteUint32Le(offset, v uint32) bool
}

// counter is the fuel global (see internal/fuel): wazero's
// api.MutableGlobal satisfies it.
type counter interface {
	Get() uint64
	Set(uint64)
}

// hostFunc is one function the host gives the guest, the same for every
// engine: params and results are its types, one letter each, i for i32 and
// I for i64; stack holds the arguments on entry and the results on return
// (wazero's GoModuleFunc convention), i32s zero-extended. A host function stops the run by panicking with errFuel or
// errStopped; each engine turns that into its call's error.
type hostFunc struct {
	module, name    string
	params, results string
	fn              func(ctx context.Context, in instance, stack []uint64)
}

// hostFuncs are the functions the host gives the guest beside WASI's: the
// host-call ABI (hostcall.go) and poll_oneoff, which serves both sleeps and
// the fuel meter's refuel (see refuelImport).
var hostFuncs = []hostFunc{
	{module: hostModule, name: "call", params: "iiiiii", results: "i", fn: hostCall},
	{module: hostModule, name: "take", params: "ii", results: "i", fn: hostTake},
	{module: wasiModule, name: "poll_oneoff", params: "iiii", results: "i", fn: pollOneoff},
}

// memBytes is a guestMemory over a byte slice: an engine whose memory is
// one (wasmtime's) hands a fresh one to each host call.
type memBytes []byte

func (m memBytes) Size() uint32 { return uint32(len(m)) }

func (m memBytes) Read(off, n uint32) ([]byte, bool) {
	if uint64(off)+uint64(n) > uint64(len(m)) {
		return nil, false
	}
	return m[off : off+n : off+n], true
}

func (m memBytes) Write(off uint32, b []byte) bool {
	if uint64(off)+uint64(len(b)) > uint64(len(m)) {
		return false
	}
	copy(m[off:], b)
	return true
}

func (m memBytes) ReadUint32Le(off uint32) (uint32, bool) {
	b, ok := m.Read(off, 4)
	if !ok {
		return 0, false
	}
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24, true
}

func (m memBytes) WriteUint32Le(off, v uint32) bool {
	return m.Write(off, []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)})
}

// cStringIn copies s into the instance's memory, allocated with its malloc.
func cStringIn(ctx context.Context, in instance, s string) (uint32, error) {
	malloc := in.export("malloc")
	if malloc == nil {
		return 0, errors.New("the interpreter does not export malloc")
	}
	p, err := malloc(ctx, uint64(len(s)+1))
	if err != nil {
		return 0, err
	}
	if p == 0 || !in.memory().Write(uint32(p), append([]byte(s), 0)) {
		return 0, fmt.Errorf("malloc(%d) failed", len(s)+1)
	}
	return uint32(p), nil
}

// callIn calls the instance's export name.
func callIn(ctx context.Context, in instance, name string, args ...uint64) (uint64, error) {
	fn := in.export(name)
	if fn == nil {
		return 0, fmt.Errorf("the interpreter does not export %s", name)
	}
	return fn(ctx, args...)
}
