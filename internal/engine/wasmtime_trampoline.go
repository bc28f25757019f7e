//go:build wasmtime && cgo

package engine

/*
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct wasmtime_caller wasmtime_caller_t;
typedef struct wasmtime_context wasmtime_context_t;
typedef struct wasmtime_store wasmtime_store_t;
typedef struct wasmtime_linker wasmtime_linker_t;
typedef struct wasmtime_error wasmtime_error_t;
typedef struct wasm_functype_t wasm_functype_t;
typedef struct wasm_trap_t wasm_trap_t;
typedef struct { uint64_t lo, hi; } wp_raw_t; // wasmtime_val_raw_t: 16 bytes, 8-aligned
typedef struct { uint64_t store_id; uint32_t private1, private2; } wp_memory_t; // wasmtime_memory_t
typedef struct { uint8_t kind; union { wp_memory_t memory; uint64_t any[3]; } of; } wp_extern_t; // wasmtime_extern_t
#define WP_EXTERN_MEMORY 3

extern wasmtime_context_t *wasmtime_caller_context(wasmtime_caller_t *);
extern wasmtime_context_t *wasmtime_store_context(wasmtime_store_t *);
extern void *wasmtime_context_get_data(const wasmtime_context_t *);
extern bool wasmtime_caller_export_get(wasmtime_caller_t *, const char *, size_t, wp_extern_t *);
extern uint8_t *wasmtime_memory_data(const wasmtime_context_t *, const wp_memory_t *);
extern size_t wasmtime_memory_data_size(const wasmtime_context_t *, const wp_memory_t *);
extern wasm_trap_t *wasmtime_trap_new(const char *, size_t);
typedef wasm_trap_t *(*wp_unchecked_t)(void *, wasmtime_caller_t *, wp_raw_t *, size_t);
extern wasmtime_error_t *wasmtime_linker_define_func_unchecked(wasmtime_linker_t *,
	const char *, size_t, const char *, size_t, const wasm_functype_t *,
	wp_unchecked_t, void *, void (*)(void *));

extern char *wpHostCall(size_t fn, void *caller, size_t store, uint64_t *vals, size_t n, uint8_t *mem, size_t mem_len);

// wp_trampoline is every host function's entry: it finds the store's
// index and the memory in C, then calls Go once.
static wasm_trap_t *wp_trampoline(void *env, wasmtime_caller_t *caller, wp_raw_t *vals, size_t n) {
	wasmtime_context_t *ctx = wasmtime_caller_context(caller);
	size_t store = (size_t)wasmtime_context_get_data(ctx);
	wp_extern_t ex;
	uint8_t *mem = NULL;
	size_t len = 0;
	if (wasmtime_caller_export_get(caller, "memory", 6, &ex) && ex.kind == WP_EXTERN_MEMORY) {
		mem = wasmtime_memory_data(ctx, &ex.of.memory);
		len = wasmtime_memory_data_size(ctx, &ex.of.memory);
	}
	char *err = wpHostCall((size_t)env, caller, store, (uint64_t *)vals, n, mem, len);
	if (err == NULL) return NULL;
	wasm_trap_t *trap = wasmtime_trap_new(err, strlen(err));
	free(err);
	return trap;
}

static wasmtime_error_t *wp_define(wasmtime_linker_t *l, _GoString_ module, _GoString_ name, wasm_functype_t *ty, size_t fn) {
	return wasmtime_linker_define_func_unchecked(l, _GoStringPtr(module), _GoStringLen(module),
		_GoStringPtr(name), _GoStringLen(name), ty, wp_trampoline, (void *)fn, NULL);
}

static size_t wp_store_index(wasmtime_store_t *s) {
	return (size_t)wasmtime_context_get_data(wasmtime_store_context(s));
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/bytecodealliance/wasmtime-go/v39"
)

// wtHostFuncs are the functions the linker defines, by their index, the
// trampoline's env: WASI's (wasi.go) and ours (seam.go).
var wtHostFuncs = append(append([]hostFunc{}, wasiFuncs...), hostFuncs...)

// defineHostFuncs defines every host function in l, through the trampoline.
func defineHostFuncs(l *wasmtime.Linker) error {
	lp := *(**C.wasmtime_linker_t)(unsafe.Pointer(l)) // Linker's first field, _ptr
	for i, f := range wtHostFuncs {
		ty := wasmtime.NewFuncType(valTypes(f.params), valTypes(f.results))
		tp := *(**C.wasm_functype_t)(unsafe.Pointer(ty)) // FuncType's first field, _ptr
		if e := C.wp_define(lp, f.module, f.name, tp, C.size_t(i)); e != nil {
			// The error is the binding's to read: hand it over as its Error.
			return fmt.Errorf("wasmpy: host function %s.%s: %w", f.module, f.name, wrapError(unsafe.Pointer(e)))
		}
		runtime.KeepAlive(ty)
	}
	runtime.KeepAlive(l)
	return nil
}

// register makes in known to the trampoline; unregister before its store
// is deleted (the binding reuses the index).
func (in *wtInstance) register() {
	in.storeIndex = uintptr(C.wp_store_index(*(**C.wasmtime_store_t)(unsafe.Pointer(in.store))))
	wtInstances.Store(in.storeIndex, in)
}

func (in *wtInstance) unregister() {
	wtInstances.CompareAndDelete(in.storeIndex, in)
}

// wrapError reads and frees a wasmtime_error_t through the binding.
func wrapError(p unsafe.Pointer) error {
	e := new(wasmtime.Error)
	*(*unsafe.Pointer)(unsafe.Pointer(e)) = p // Error's one field, _ptr
	defer e.Close()
	return fmt.Errorf("%s", e.Error())
}
