//go:build wasmtime && cgo && (linux || darwin)

package engine

/*
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

typedef struct wasmtime_error wasmtime_error_t;
typedef struct wasm_config_t wasm_config_t;
typedef struct wasm_memorytype_t wasm_memorytype_t;
typedef uint8_t *(*wasmtime_memory_get_callback_t)(void *env, size_t *byte_size, size_t *byte_capacity);
typedef wasmtime_error_t *(*wasmtime_memory_grow_callback_t)(void *env, size_t new_size);
typedef struct wasmtime_linear_memory {
	void *env;
	wasmtime_memory_get_callback_t get_memory;
	wasmtime_memory_grow_callback_t grow_memory;
	void (*finalizer)(void *);
} wasmtime_linear_memory_t;
typedef wasmtime_error_t *(*wasmtime_new_memory_callback_t)(void *env, const wasm_memorytype_t *ty,
	size_t minimum, size_t maximum, size_t reserved_size_in_bytes, size_t guard_size_in_bytes,
	wasmtime_linear_memory_t *memory_ret);
typedef struct wasmtime_memory_creator {
	void *env;
	wasmtime_new_memory_callback_t new_memory;
	void (*finalizer)(void *);
} wasmtime_memory_creator_t;
extern void wasmtime_config_host_memory_creator_set(wasm_config_t *, wasmtime_memory_creator_t *);
extern wasmtime_error_t *wasmtime_error_new(const char *);

// wpmem is one instance's linear memory: a reservation of which the first
// size bytes are accessible; the image, when there is one, is mapped
// privately over its start, so a run copies only the pages it writes.
typedef struct {
	uint8_t *base;
	size_t size, capacity, mapped, limit;
	int refused;
} wpmem;

// What the next memory created is made of: set by Go, under its lock,
// around each instantiation (wasmtime creates the memory on the thread
// that instantiates).
typedef struct {
	size_t limit;
	int fd;
	int64_t off;
	size_t image;
	wpmem *made;
} wpnext;
static wpnext wp_next = {0, -1, 0, 0, NULL};

static void wp_set_next(size_t limit, int fd, int64_t off, size_t image) {
	wp_next.limit = limit; wp_next.fd = fd; wp_next.off = off; wp_next.image = image; wp_next.made = NULL;
}
static wpmem *wp_made(void) { return wp_next.made; }
static void wp_set_limit(wpmem *m, size_t limit) { m->limit = limit; }
static size_t wp_size(wpmem *m) { return m->size; }

static uint8_t *wp_get(void *env, size_t *size, size_t *capacity) {
	wpmem *m = env;
	*size = m->size;
	*capacity = m->capacity;
	return m->base;
}

static wasmtime_error_t *wp_grow(void *env, size_t n) {
	wpmem *m = env;
	if (n > m->limit || n > m->capacity) {
		m->refused = 1;
		return wasmtime_error_new("wasmpy: memory limit reached");
	}
	if (n > m->size && mprotect(m->base + m->size, n - m->size, PROT_READ | PROT_WRITE) != 0) {
		return wasmtime_error_new("wasmpy: mprotect failed");
	}
	if (n > m->size) m->size = n;
	return NULL;
}

static void wp_free(void *env) {
	wpmem *m = env;
	munmap(m->base, m->mapped);
	free(m);
}

// The first memory an instantiation creates is the guest's (memory 0),
// limited and laid from the image; a later one is the checked form's stop
// memory (wasmtime_stop.go): one page, its own maximum its limit.
//
// wasmtime asks for the stop memory what it asks for any: 4 GiB reserved,
// which lets compiled code leave out bounds checks of computed addresses.
// The only accesses to it are the checks' loads of the constant address 0,
// in bounds of its one page, so it reserves that page and the guard only:
// a live instance holds one 4 GiB reservation, not two. (A larger second
// memory gets what wasmtime asks for.)
static wasmtime_error_t *wp_new(void *env, const wasm_memorytype_t *ty, size_t minimum, size_t maximum,
		size_t reserved, size_t guard, wasmtime_linear_memory_t *ret) {
	int guest = wp_next.made == NULL;
	size_t capacity, limit;
	if (guest) {
		limit = wp_next.limit;
		capacity = reserved > limit ? reserved : limit;
	} else {
		limit = maximum;
		capacity = maximum;
		if (capacity > 65536 && reserved > capacity) capacity = reserved;
	}
	if (capacity < minimum) capacity = minimum;
	size_t total = capacity + guard;
	wpmem *m = calloc(1, sizeof(wpmem));
	if (m == NULL) return wasmtime_error_new("wasmpy: out of host memory");
	void *base = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED) {
		free(m);
		return wasmtime_error_new("wasmpy: cannot reserve the memory");
	}
	m->base = base; m->mapped = total; m->capacity = capacity; m->limit = limit;
	if (guest && wp_next.fd >= 0 && wp_next.image > 0 && wp_next.image <= capacity &&
			mmap(base, wp_next.image, PROT_NONE, MAP_PRIVATE | MAP_FIXED, wp_next.fd, wp_next.off) == MAP_FAILED) {
		wp_free(m);
		return wasmtime_error_new("wasmpy: cannot map the image");
	}
	if (minimum > m->limit) {
		m->refused = 1;
		wp_free(m);
		return wasmtime_error_new("wasmpy: memory limit below the interpreter's initial memory");
	}
	if (minimum > 0 && mprotect(base, minimum, PROT_READ | PROT_WRITE) != 0) {
		wp_free(m);
		return wasmtime_error_new("wasmpy: mprotect failed");
	}
	m->size = minimum;
	ret->env = m;
	ret->get_memory = wp_get;
	ret->grow_memory = wp_grow;
	ret->finalizer = wp_free;
	if (guest) wp_next.made = m;
	return NULL;
}

static void wp_install(wasm_config_t *cfg) {
	wasmtime_memory_creator_t c = {NULL, wp_new, NULL};
	wasmtime_config_host_memory_creator_set(cfg, &c);
}
*/
import "C"

import (
	"sync"
	"syscall"
	"unsafe"

	"github.com/bytecodealliance/wasmtime-go/v39"
)

// wasmtime's instance memories are ours (a custom memory creator through
// the C API, which the Go binding lacks): the run's limit is enforced as a
// refused memory.grow (MemoryError in the guest) that the host sees, and
// the image is mapped copy-on-write as under wazero, not copied.
const customMemory = true

// installMemory makes cfg's engine create instance memories with wp_new.
func installMemory(cfg *wasmtime.Config) {
	ptr := *(**C.wasm_config_t)(unsafe.Pointer(cfg)) // Config's only field, _ptr
	C.wp_install(ptr)
}

// nextMemory serializes instantiations: wp_new reads what the next memory
// is made of from one place.
var nextMemory sync.Mutex

// memState is the C side of an instance's memory.
type memState struct{ m *C.wpmem }

// withMemory runs instantiate with the memory it creates limited to limit
// bytes and, with an image in a file, the image mapped over its start.
func withMemory(limit uint64, img *image, instantiate func() error) (memState, error) {
	nextMemory.Lock()
	defer nextMemory.Unlock()
	fd, off, size := C.int(-1), C.int64_t(0), C.size_t(0)
	if img != nil && img.fd >= 0 {
		fd, off, size = C.int(img.fd), C.int64_t(img.off), C.size_t(img.size)
	}
	C.wp_set_next(C.size_t(limit), fd, off, size)
	err := instantiate()
	return memState{C.wp_made()}, err
}

// mapped reports whether the image is mapped into the memory already.
func (s memState) mapped(img *image) bool { return s.m != nil && img != nil && img.fd >= 0 }

func (s memState) refused() bool { return s.m != nil && s.m.refused != 0 }

// size is how many bytes of the memory are accessible now; any goroutine
// may ask (it only grows, until the store is deleted).
func (s memState) size() uint64 {
	if s.m == nil {
		return 0
	}
	return uint64(C.wp_size(s.m))
}

// limit sets the most the memory may grow to, for an instance made ahead
// of its run; false when it is past that already. Call it while the
// instance waits in a host call.
func (s memState) limit(n uint64) bool {
	if s.m == nil {
		return false
	}
	if uint64(C.wp_size(s.m)) > n {
		return false
	}
	C.wp_set_limit(s.m, C.size_t(n))
	return true
}

// maxWasmStack is how much of the native stack wasm may use: 4 MiB (the
// wazero build's deep recursions, CPython's parser included, need more
// than wasmtime's 512 KiB default), and at most half of what the thread
// stack limit gives the threads cgo calls run on. Past it, a trap.
func maxWasmStack() int {
	limit := 4 << 20
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_STACK, &rl); err == nil && rl.Cur != ^uint64(0) && rl.Cur/2 < uint64(limit) {
		limit = int(rl.Cur / 2)
	}
	return limit
}
