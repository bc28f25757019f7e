package engine

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"

	"github.com/wasmpy/wasmpy/hostfuncs"
)

// The host-call ABI of the core build, module "wasmpy" (the guest half
// is assets/build/wasmpymodule.c):
//
//	call(fn_ptr, fn_len, args_ptr, args_len, data_ptr, data_len i32) -> i32
//	    runs capability fn (its name, UTF-8) with args (its keyword
//	    arguments as a JSON object; empty for none) and data (raw bytes;
//	    data_len noData for none), keeps the response, returns the length
//	    of the response's body
//	take(out_ptr, out_len i32) -> i32
//	    copies the kept body to out (out_len must be the length call
//	    returned) and returns the body's kind
//
// Kinds: kindJSON a JSON value, kindBytes raw bytes (a capability's
// hostfuncs.Bytes), kindText UTF-8 text (hostfuncs.Text), kindError a JSON
// object {"type": PythonExceptionClass, "message": text}. Bulk bytes cross
// as they lie in memory, one copy each way, and the envelope is no JSON.
//
// Two steps, so a body of any size needs no retry and each request runs
// exactly once. failed (0xFFFFFFFF) means the exchange itself broke (an
// out-of-bounds pointer, a take without a call): the guest raises
// RuntimeError. A request that is malformed but readable (no name, args not
// a JSON object) gets a kindError response, as a refused capability does.
const (
	hostModule  = "wasmpy"
	failed      = 0xFFFFFFFF
	noData      = 0xFFFFFFFF
	maxRequest  = 64 << 20 // the three parts together
	maxResponse = 64 << 20
	maxFnName   = 128
	maxCallLog  = 10000
)

// The kinds of response body.
const (
	kindJSON uint32 = iota
	kindBytes
	kindText
	kindError
)

// response is a request's answer, as take hands it over.
type response struct {
	kind uint32
	body []byte // never nil
}

// HostCall is one capability call a run made; payloads are not recorded.
type HostCall struct {
	Name       string  `json:"name"`
	DurationMS float64 `json:"duration_ms"`
	OK         bool    `json:"ok"`
	Error      string  `json:"error,omitempty"` // the Python exception class, when not OK
}

// runState is what the host functions know of the run calling them; it
// travels in the ctx of the guest call. A parked instance has one before it
// has a job: the runner's _job call closes waiting and waits for ready,
// which is closed once bind has filled in the run.
type runState struct {
	waiting     chan struct{}
	waitingOnce sync.Once
	ready       chan struct{}

	ctx    context.Context // the run's: capabilities see its deadline and values
	meter  *meter
	clock  *clock
	host   hostfuncs.Table
	job    []byte
	source []byte // the code, shared with the Run's string: never written
	stdin  *stdin
	stdout io.Writer
	stderr io.Writer
	random io.Reader
	fs     experimentalsys.FS // the run's file system at /; nil: none
	app    experimentalsys.FS // the run's program at AppMount; nil: none
	intr   interrupter
	// onJob, when set, runs as the runner takes its job: an instance that
	// was not parked starts counting the run's fuel there, as a parked
	// one does, so the same job costs the same on every engine.
	onJob func()

	mu      sync.Mutex
	pending *response // kept by call until take
	report  *report
	calls   []HostCall
	nCalls  int
}

func newRunState(m *meter) *runState {
	return &runState{meter: m, waiting: make(chan struct{}), ready: make(chan struct{}),
		ctx: context.Background(), clock: newClock(false), random: rand.Reader,
		stdin: newStdin(nil), stdout: io.Discard, stderr: io.Discard, intr: newInterrupter()}
}

// bind gives the state its run; the instance sees it once ready is closed.
func (st *runState) bind(ctx context.Context, r *Run, job []byte, stdout, stderr io.Writer) {
	st.ctx, st.clock, st.host, st.job = ctx, newClock(r.Deterministic), r.Host, job
	// The source reaches guest memory straight from the caller's string:
	// a large script costs the host no copy of its own.
	st.source = []byte{} // a response, even when empty
	if r.Code != "" {
		st.source = unsafe.Slice(unsafe.StringData(r.Code), len(r.Code))
	}
	st.stdin, st.stdout, st.stderr = newStdin(r.Stdin), stdout, stderr
	if r.FS != nil {
		st.fs = r.FS(st.clock.wallNanos)
	}
	if r.App != nil {
		st.app = appFS(r.App)
	}
	if r.Deterministic {
		st.random = mrand.NewChaCha8([32]byte{'w', 'a', 's', 'm', 'p', 'y'})
	}
}

// results is what the run's host calls left: the runner's report and the log.
func (st *runState) results() (*report, []HostCall, int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.report, st.calls, st.nCalls
}

type stateKey struct{}

func stateFrom(ctx context.Context) *runState {
	st, _ := ctx.Value(stateKey{}).(*runState)
	return st
}

func clockFrom(ctx context.Context) *clock {
	if st := stateFrom(ctx); st != nil {
		return st.clock
	}
	return newClock(false)
}

func hostCall(ctx context.Context, in instance, stack []uint64) {
	stopIfDone(ctx)
	st := stateFrom(ctx)
	req, ok := readRequest(in.memory(), stack)
	stack[0] = failed
	if st == nil || !ok {
		return
	}
	st.mu.Lock()
	outOfOrder := st.pending != nil
	st.pending = nil
	st.mu.Unlock()
	if outOfOrder { // the last response was never taken
		return
	}
	resp := st.serve(ctx, req)
	// A capability that ran past the deadline returns to no guest: the
	// run's ctx is the one it saw (the instance's follows it a moment later).
	stopIfDone(st.ctx)
	st.mu.Lock()
	st.pending = &resp
	st.mu.Unlock()
	stack[0] = uint64(len(resp.body))
}

// readRequest copies call's three parts out of guest memory; false when
// one lies out of bounds or they exceed maxRequest together.
func readRequest(mem guestMemory, stack []uint64) (request, bool) {
	fnPtr, fnLen := uint32(stack[0]), uint32(stack[1])
	argsPtr, argsLen := uint32(stack[2]), uint32(stack[3])
	dataPtr, dataLen := uint32(stack[4]), uint32(stack[5])
	total := uint64(fnLen) + uint64(argsLen)
	if dataLen != noData {
		total += uint64(dataLen)
	}
	if total > maxRequest {
		return request{}, false
	}
	fn, ok1 := mem.Read(fnPtr, fnLen)
	args, ok2 := mem.Read(argsPtr, argsLen)
	if !ok1 || !ok2 {
		return request{}, false
	}
	r := request{Fn: string(fn), Args: bytes.Clone(args)}
	if dataLen != noData {
		data, ok := mem.Read(dataPtr, dataLen)
		if !ok {
			return request{}, false
		}
		r.Data = append([]byte{}, data...)
	}
	return r, true
}

func hostTake(ctx context.Context, in instance, stack []uint64) {
	ptr, n := uint32(stack[0]), uint32(stack[1])
	stack[0] = failed
	st := stateFrom(ctx)
	if st == nil {
		return
	}
	st.mu.Lock()
	resp := st.pending
	st.pending = nil
	st.mu.Unlock()
	if resp == nil || uint32(len(resp.body)) != n || !in.memory().Write(ptr, resp.body) {
		return
	}
	stack[0] = uint64(resp.kind)
}

// request is one guest call, read out of its memory.
type request struct {
	Fn   string
	Args json.RawMessage
	Data []byte // nil: the call carries none
}

// check checks a guest's request; the guest is hostile, so anything but
// the exact shape is an error. Empty args stand for {}.
func (r *request) check() error {
	if r.Fn == "" || len(r.Fn) > maxFnName {
		return fmt.Errorf("request names no function, or one longer than %d bytes", maxFnName)
	}
	if len(r.Args) == 0 {
		r.Args = json.RawMessage("{}")
		return nil
	}
	if !json.Valid(r.Args) {
		return errors.New("request args are not JSON")
	}
	if bytes.TrimLeft(r.Args, " \t\r\n")[0] != '{' {
		return errors.New("request args must be a JSON object")
	}
	return nil
}

// serve runs one request and returns its response.
func (st *runState) serve(ctx context.Context, req request) response {
	if err := req.check(); err != nil {
		return errorResponse(hostfuncs.Errorf(hostfuncs.ValueError, "wasmpy host call: %v", err))
	}
	switch req.Fn {
	case "_job":
		st.waitingOnce.Do(func() { close(st.waiting) })
		select {
		case <-st.ready:
		case <-ctx.Done():
			return errorResponse(hostfuncs.Errorf(hostfuncs.HostError, "the instance was discarded before a job came"))
		}
		if st.onJob != nil {
			st.onJob()
		}
		return response{kindJSON, st.job}
	case "_source": // raw bytes, straight from the Run's string
		return response{kindBytes, st.source}
	case "_report":
		var rep report
		if err := json.Unmarshal(req.Args, &rep); err != nil {
			return errorResponse(hostfuncs.Errorf(hostfuncs.ValueError, "bad report: %v", err))
		}
		rep.bound()
		st.mu.Lock()
		st.report = &rep
		st.mu.Unlock()
		return response{kindJSON, []byte("null")}
	}
	fn, ok := st.host[req.Fn]
	if !ok {
		return errorResponse(hostfuncs.Errorf(hostfuncs.PermissionError, "capability %q is not granted to this run", req.Fn))
	}
	cctx := st.ctx
	if req.Data != nil {
		cctx = hostfuncs.WithData(cctx, req.Data)
	}
	start := time.Now()
	value, err := callSafely(cctx, fn, req)
	var resp response
	if err == nil {
		resp, err = okResponse(value)
	}
	call := HostCall{Name: req.Fn, DurationMS: float64(time.Since(start).Microseconds()) / 1000, OK: err == nil}
	if err != nil {
		e := hostfuncs.AsError(err)
		call.Error = e.Type
		resp = errorResponse(e)
	}
	st.log(call)
	return resp
}

// callSafely runs a capability; a panic in it (an embedder's bug) fails the
// call, not the run or the host.
func callSafely(ctx context.Context, fn hostfuncs.Func, req request) (value any, err error) {
	defer func() {
		if r := recover(); r != nil {
			value, err = nil, hostfuncs.Errorf(hostfuncs.HostError, "capability %s failed: %v", req.Fn, r)
		}
	}()
	return fn(ctx, req.Args)
}

func (st *runState) log(c HostCall) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.nCalls++
	if len(st.calls) < maxCallLog {
		st.calls = append(st.calls, c)
	}
}

// okResponse encodes a capability's value: Bytes and Text raw, anything
// else as JSON.
func okResponse(value any) (response, error) {
	resp := response{kind: kindJSON}
	switch v := value.(type) {
	case hostfuncs.Bytes:
		resp = response{kindBytes, v}
	case hostfuncs.Text:
		if !utf8.Valid(v) {
			return resp, hostfuncs.Errorf(hostfuncs.HostError, "the host's text answer is not valid UTF-8")
		}
		resp = response{kindText, v}
	default:
		b, err := json.Marshal(value)
		if err != nil {
			return resp, hostfuncs.Errorf(hostfuncs.HostError, "the host's answer is not JSON: %v", err)
		}
		resp.body = b
	}
	if len(resp.body) > maxResponse {
		return resp, hostfuncs.Errorf(hostfuncs.HostError, "the host's answer of %d bytes exceeds %d", len(resp.body), maxResponse)
	}
	if resp.body == nil {
		resp.body = []byte{}
	}
	return resp, nil
}

func errorResponse(err error) response {
	e := hostfuncs.AsError(err)
	b, _ := json.Marshal(map[string]string{"type": e.Type, "message": e.Message})
	return response{kindError, b}
}
