package wasm

import (
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// memory backs one instance's linear memory and enforces the run's limit:
// a memory.grow past it fails (Python then raises MemoryError) instead of
// taking host memory.
type memory struct {
	limit   uint64
	buf     []byte
	peak    atomic.Uint64
	refused atomic.Bool
}

func (m *memory) Allocate(cap, max uint64) experimental.LinearMemory {
	if cap > m.limit {
		cap = m.limit
	}
	m.buf = make([]byte, 0, cap)
	return m
}

// Reallocate grows geometrically, so dlmalloc's many small sbrk calls do not
// copy the whole memory each time.
func (m *memory) Reallocate(size uint64) []byte {
	if size > m.limit {
		m.refused.Store(true)
		return nil
	}
	if size > uint64(cap(m.buf)) {
		newCap := min(max(size, 2*uint64(cap(m.buf))), m.limit)
		buf := make([]byte, size, newCap)
		copy(buf, m.buf)
		m.buf = buf
	} else {
		m.buf = m.buf[:size]
	}
	if size > m.peak.Load() {
		m.peak.Store(size)
	}
	return m.buf
}

func (m *memory) Free() { m.buf = nil }
