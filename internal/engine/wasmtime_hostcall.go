//go:build wasmtime && cgo

package engine

// #include <stdint.h>
// #include <stddef.h>
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/bytecodealliance/wasmtime-go/v39"
)

// The host functions reach Go through a trampoline of our own (see
// wasmtime_trampoline.go) rather than the binding's Linker.FuncNew: the
// binding's callback makes a Val per argument and result, each read and
// written through a cgo call, and finds the store's data under a global
// lock, about twenty calls from Go into C for one host call. Ours reads
// the raw arguments in place, and the trampoline hands over the memory's
// address with them, so a host call crosses from C into Go once and back
// into C not at all.

// wtInstances finds the instance of a store from the index the binding
// keeps in the store's context data.
var wtInstances sync.Map // uintptr -> *wtInstance

// wpHostCall runs host function fn (an index into wtHostFuncs) for the
// instance of store: vals holds n raw values of 16 bytes (the arguments
// on entry, the results on return), mem the instance's memory as it is
// now. It returns nil, or an error message (malloc'd; the trampoline
// frees it) that becomes the trap. It never panics: a panic would cross C.
//
//export wpHostCall
func wpHostCall(fn C.size_t, caller unsafe.Pointer, store C.size_t, vals *C.uint64_t, n C.size_t, mem *C.uint8_t, memLen C.size_t) (msg *C.char) {
	defer func() {
		if r := recover(); r != nil { // a bug of ours, not the guest's
			msg = C.CString(fmt.Sprintf("wasmpy: host call failed: %v", r))
		}
	}()
	v, ok := wtInstances.Load(uintptr(store))
	if !ok || int(fn) >= len(wtHostFuncs) {
		return C.CString("wasmpy: host call from an unknown instance")
	}
	in := v.(*wtInstance)
	f := &wtHostFuncs[fn]
	raw := unsafe.Slice((*[2]uint64)(unsafe.Pointer(vals)), int(n))
	var buf [12]uint64 // WASI's path_open has the most parameters, 9
	stack := buf[:0]
	if n := max(len(f.params), len(f.results)); n <= len(buf) {
		stack = buf[:n]
	} else {
		stack = make([]uint64, n)
	}
	if len(stack) > len(raw) {
		return C.CString("wasmpy: host call with too few values")
	}
	for i, c := range f.params {
		if c == 'I' {
			stack[i] = raw[i][0]
		} else {
			stack[i] = uint64(uint32(raw[i][0]))
		}
	}
	c := new(wasmtime.Caller)
	*(*unsafe.Pointer)(unsafe.Pointer(c)) = caller // Caller's one field, ptr
	prev, prevView := in.cur, in.view
	in.cur, in.view = c, nil
	if mem != nil {
		in.view = memBytes(unsafe.Slice((*byte)(unsafe.Pointer(mem)), int(memLen)))
	}
	err := in.serve(*f, stack)
	in.cur, in.view = prev, prevView
	*(*unsafe.Pointer)(unsafe.Pointer(c)) = nil // a Caller kept past its call panics, as the binding's does
	if err != nil {
		return C.CString(err.Error())
	}
	for i, c := range f.results {
		if c == 'I' {
			raw[i][0] = stack[i]
		} else {
			raw[i][0] = uint64(uint32(stack[i]))
		}
	}
	return nil
}
