//go:build wasmtime && cgo

package engine

// #include <stdint.h>
import "C"

import "runtime/cgo"

// wpEpochEvent runs on the guest's thread, inside the epoch callback of an
// instance of the free kind (wasmtime_epoch.go), as a refuel runs inside a
// metered one: it takes a pending interrupt, and every few ticks a flush
// of the guest's stdout, and says which signals the callback is to raise
// in the guest (1 SIGINT, 2 the flush), so that Ctrl-C and streamed output
// work alike with and without a fuel budget. It must not touch the store,
// which is in use: the callback raises them through its own context.
//
//export wpEpochEvent
func wpEpochEvent(handle C.uintptr_t, flush C.int32_t) C.int32_t {
	st, ok := cgo.Handle(handle).Value().(*runState)
	if !ok {
		return 0
	}
	sigs := C.int32_t(0)
	if st.intr.take() {
		sigs |= 1
	}
	if flush != 0 {
		sigs |= 2
	}
	return sigs
}
