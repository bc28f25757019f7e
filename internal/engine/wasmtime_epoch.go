//go:build wasmtime && cgo

package engine

/*
#include <stdint.h>
#include <stdlib.h>

typedef struct wasmtime_store wasmtime_store_t;
typedef struct wasmtime_context wasmtime_context_t;
typedef struct wasmtime_error wasmtime_error_t;
typedef uint8_t wasmtime_update_deadline_kind_t;
extern void wasmtime_store_epoch_deadline_callback(wasmtime_store_t *store,
	wasmtime_error_t *(*func)(wasmtime_context_t *context, void *data, uint64_t *epoch_deadline_delta,
		wasmtime_update_deadline_kind_t *update_kind),
	void *data, void (*finalizer)(void *));
extern wasmtime_error_t *wasmtime_error_new(const char *);

// At every epoch tick the instance checks its stop flag, in C: a tick
// costs no call into Go.
static wasmtime_error_t *wp_epoch(wasmtime_context_t *ctx, void *data, uint64_t *delta,
		wasmtime_update_deadline_kind_t *kind) {
	if (__atomic_load_n((int32_t *)data, __ATOMIC_RELAXED)) {
		return wasmtime_error_new("wasmpy: run stopped");
	}
	*delta = 1;
	*kind = 0; // WASMTIME_UPDATE_DEADLINE_CONTINUE
	return NULL;
}

static int32_t *wp_watch(wasmtime_store_t *store) {
	int32_t *flag = calloc(1, sizeof(int32_t));
	if (flag != NULL) wasmtime_store_epoch_deadline_callback(store, wp_epoch, flag, free);
	return flag;
}

static void wp_stop(int32_t *flag) { __atomic_store_n(flag, 1, __ATOMIC_RELAXED); }
*/
import "C"

import (
	"context"
	"sync"
	"time"
	"unsafe"

	"github.com/bytecodealliance/wasmtime-go/v39"
)

// epochTick is how often the engine's epoch advances while an unmetered
// run is in progress: how soon such a run stops once its context is done.
const epochTick = time.Millisecond

// epochs advances an engine's epoch while anyone watches it.
type epochs struct {
	engine *wasmtime.Engine
	mu     sync.Mutex
	users  int
	stop   chan struct{}
}

// arm has the store's instance check, at every tick, whether its run has
// stopped; call it before the instance runs.
func (ep *epochs) arm(s *wasmtime.Store) *C.int32_t {
	flag := C.wp_watch(*(**C.wasmtime_store_t)(unsafe.Pointer(s))) // Store's first field, _ptr
	s.SetEpochDeadline(1)
	return flag
}

// watch ticks while the run goes on, and stops the armed instance at the
// next tick once ctx is done; call the returned function when its call
// has returned.
func (ep *epochs) watch(ctx context.Context, flag *C.int32_t) func() {
	stopFlag := context.AfterFunc(ctx, func() {
		if flag != nil {
			C.wp_stop(flag)
		}
	})
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
			ep.engine.IncrementEpoch()
		case <-stop:
			return
		}
	}
}
