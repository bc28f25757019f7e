//go:build wasmtime && cgo

package engine

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct wasmtime_store wasmtime_store_t;
typedef struct wasmtime_context wasmtime_context_t;
typedef struct wasmtime_error wasmtime_error_t;
typedef uint8_t wasmtime_update_deadline_kind_t;
extern void wasmtime_store_epoch_deadline_callback(wasmtime_store_t *store,
	wasmtime_error_t *(*func)(wasmtime_context_t *context, void *data, uint64_t *epoch_deadline_delta,
		wasmtime_update_deadline_kind_t *update_kind),
	void *data, void (*finalizer)(void *));
extern wasmtime_error_t *wasmtime_error_new(const char *);

// The C API's types this file needs, as its headers define them.
typedef struct { uint64_t store_id; void *private_; } wp_func_t;      // wasmtime_func_t
typedef struct { uint8_t kind; union { int32_t i32; int64_t i64; uint8_t raw[24]; } of; } wp_val_t; // wasmtime_val_t
typedef struct wasm_trap_t wasm_trap_t;
extern wasmtime_error_t *wasmtime_func_call(wasmtime_context_t *, const wp_func_t *, const wp_val_t *, size_t,
	wp_val_t *, size_t, wasm_trap_t **);
extern void wasm_trap_delete(wasm_trap_t *);
extern void wasmtime_context_set_epoch_deadline(wasmtime_context_t *, uint64_t);
typedef struct { size_t size; char *data; } wp_byte_vec_t; // wasm_byte_vec_t
extern void wasm_trap_message(const wasm_trap_t *, wp_byte_vec_t *);
extern void wasm_byte_vec_delete(wp_byte_vec_t *);

// wpwatch is what an instance's epoch callback reads: stop, set when its
// run is done; pending, set when an interrupt waits to be raised; ticks
// since the guest's stdout was last flushed; handle, the cgo.Handle of its
// runState, for the Go side; fn, the guest's PyErr_SetInterruptEx.
typedef struct {
	int32_t stop, pending, ticks, has_fn;
	uintptr_t handle;
	wp_func_t fn;
} wpwatch;

// wpEpochEvent (wasmtime_epoch_event.go) says which signals the guest is
// to get now: 1 SIGINT (an interrupt the run was asked for), 2 the flush
// of its stdout (see interrupter).
extern int32_t wpEpochEvent(uintptr_t handle, int32_t flush);

// WP_FLUSH_TICKS is how many ticks pass between flushes of the guest's
// stdout (a tick is epochTick, 10 ms; a metered run's is flushed every
// flushPeriod units of fuel, about 4 ms of CPython here).
#define WP_FLUSH_TICKS 1

// wp_signal calls PyErr_SetInterruptEx(sig) in the guest, through the
// context the callback was given (the store is in use: its own handle may
// not be).
static wasmtime_error_t *wp_signal(wasmtime_context_t *ctx, wpwatch *w, int32_t sig) {
	wp_val_t arg = {0}, ret = {0};
	arg.kind = 0; // WASMTIME_I32
	arg.of.i32 = sig;
	wasm_trap_t *trap = NULL;
	// The store's deadline is the tick that called back: the call would
	// trap at once. It gets a second's worth of ticks (it takes
	// microseconds); the callback's delta sets the next deadline after.
	wasmtime_context_set_epoch_deadline(ctx, 1000);
	wasmtime_error_t *err = wasmtime_func_call(ctx, &w->fn, &arg, 1, &ret, 1, &trap);
	if (err != NULL) return err;
	if (trap != NULL) {
		wp_byte_vec_t msg = {0, NULL};
		wasm_trap_message(trap, &msg);
		char buf[8192] = "wasmpy: raising a signal in the guest trapped: ";
		size_t at = strlen(buf), n = msg.size < sizeof(buf) - at - 1 ? msg.size : sizeof(buf) - at - 1;
		if (msg.data != NULL) memcpy(buf + at, msg.data, n);
		buf[at + n] = 0;
		wasm_byte_vec_delete(&msg);
		wasm_trap_delete(trap);
		return wasmtime_error_new(buf);
	}
	return NULL;
}

// At every epoch tick the instance checks its flags in C: a tick costs no
// call into Go unless there is something to do.
static wasmtime_error_t *wp_epoch(wasmtime_context_t *ctx, void *data, uint64_t *delta,
		wasmtime_update_deadline_kind_t *kind) {
	wpwatch *w = data;
	if (__atomic_load_n(&w->stop, __ATOMIC_RELAXED)) {
		return wasmtime_error_new("wasmpy: run stopped");
	}
	*delta = 1;
	*kind = 0; // WASMTIME_UPDATE_DEADLINE_CONTINUE
	int flush = ++w->ticks >= WP_FLUSH_TICKS;
	if (flush) w->ticks = 0;
	if ((__atomic_exchange_n(&w->pending, 0, __ATOMIC_RELAXED) || flush) && w->handle != 0 && w->has_fn) {
		int32_t sigs = wpEpochEvent(w->handle, flush);
		wasmtime_error_t *err = NULL;
		if (sigs & 1) err = wp_signal(ctx, w, 2);
		if (err == NULL && (sigs & 2)) err = wp_signal(ctx, w, 10);
		return err;
	}
	return NULL;
}

static wpwatch *wp_watch(wasmtime_store_t *store, uintptr_t handle, wp_func_t *fn) {
	wpwatch *w = calloc(1, sizeof(wpwatch));
	if (w != NULL) {
		w->handle = handle;
		if (fn != NULL) { w->fn = *fn; w->has_fn = 1; }
		wasmtime_store_epoch_deadline_callback(store, wp_epoch, w, NULL); // freed by Go (epochWatch.free)
	}
	return w;
}

static void wp_stop(wpwatch *w) { __atomic_store_n(&w->stop, 1, __ATOMIC_RELAXED); }
static void wp_poke(wpwatch *w) { __atomic_store_n(&w->pending, 1, __ATOMIC_RELAXED); }
static void wp_free(wpwatch *w) { free(w); }
*/
import "C"

import (
	"context"
	"runtime/cgo"
	"sync"
	"time"
	"unsafe"

	"github.com/bytecodealliance/wasmtime-go/v39"
)

// epochTick is how often the engine's epoch advances while an unmetered
// run is in progress: how soon such a run stops once its context is done,
// gets its Ctrl-C, and has its stdout flushed. Each tick takes the guest
// out of wasm into the callback: at 1 ms that cost it more CPU than fuel
// counting does (pyperformance, 5 benchmarks: 2.95x native against 2.87x
// metered), at 10 ms less (2.67x); see BENCHMARKS.md.
const epochTick = 10 * time.Millisecond

// epochs advances an engine's epoch while anyone watches it.
type epochs struct {
	engine *wasmtime.Engine
	mu     sync.Mutex
	users  int
	stop   chan struct{}
	closed bool // the engine is closing: no more ticks (a stopped run's watch may outlive it)
}

// close stops the ticks for good, before the engine closes.
func (ep *epochs) close() {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	ep.closed = true
}

// epochWatch is an armed instance's epoch state (C memory, freed with
// its store) and the handle its callback finds the run's state by.
type epochWatch struct {
	mu     sync.Mutex // held to reach w, which free frees
	w      *C.wpwatch
	handle cgo.Handle
}

// do runs f on the watch's C state unless it is freed: a context's
// AfterFunc or an interrupt may come after the instance has closed.
func (ew *epochWatch) do(f func(*C.wpwatch)) {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	if ew.w != nil {
		f(ew.w)
	}
}

// free releases the C state, once the store (whose callback reads it) is
// deleted.
func (ew *epochWatch) free() {
	ew.mu.Lock()
	defer ew.mu.Unlock()
	if ew.w != nil {
		C.wp_free(ew.w)
		ew.w = nil
	}
	ew.handle.Delete()
}

// arm has in's instance check, at every tick, whether its run has stopped,
// raise the interrupts st's interrupter is asked for and flush the guest's
// stdout now and then; call it before the instance runs. The handle is
// deleted when the instance closes.
func (ep *epochs) arm(in *wtInstance, st *runState) *epochWatch {
	h := cgo.NewHandle(st)
	var fn *C.wp_func_t
	if f := in.inst.GetFunc(in.store, interruptExport); f != nil {
		fn = (*C.wp_func_t)(unsafe.Pointer(f)) // Func's only field, val (copied by wp_watch)
	}
	w := C.wp_watch(*(**C.wasmtime_store_t)(unsafe.Pointer(in.store)), C.uintptr_t(h), fn) // Store's first field, _ptr
	in.store.SetEpochDeadline(1)
	ew := &epochWatch{w: w, handle: h}
	in.onClose = append(in.onClose, ew.free)
	st.intr.poke = func() { ew.do(func(w *C.wpwatch) { C.wp_poke(w) }) }
	return ew
}

// watch ticks while the run goes on, and stops the armed instance at the
// next tick once ctx is done; call the returned function when its call
// has returned.
func (ep *epochs) watch(ctx context.Context, ew *epochWatch) func() {
	stopFlag := context.AfterFunc(ctx, func() { ew.do(func(w *C.wpwatch) { C.wp_stop(w) }) })
	ep.mu.Lock()
	if ep.users++; ep.users == 1 {
		ep.stop = make(chan struct{})
		go ep.tick(ep.stop)
	}
	ep.mu.Unlock()
	return func() {
		stopFlag()
		ep.mu.Lock()
		if ep.users--; ep.users == 0 {
			close(ep.stop)
		}
		ep.mu.Unlock()
	}
}

func (ep *epochs) tick(stop chan struct{}) {
	t := time.NewTicker(epochTick)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			ep.mu.Lock()
			if ep.closed {
				ep.mu.Unlock()
				return
			}
			ep.engine.IncrementEpoch()
			ep.mu.Unlock()
		case <-stop:
			return
		}
	}
}
