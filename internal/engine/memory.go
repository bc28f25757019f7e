package engine

import (
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// memory backs one instance's linear memory and enforces the run's limit:
// a memory.grow past it fails (Python then raises MemoryError) instead of
// taking host memory.
//
// With an image on Linux, the memory is a private mapping of the image:
// pages are copied only when the run writes them, so a run starts without
// copying the interpreter's tens of megabytes. Elsewhere it is a plain
// slice, grown geometrically so dlmalloc's many small sbrk calls do not
// copy the whole memory each time.
type memory struct {
	limit   uint64
	image   *image // laid over the memory by restore; nil for none
	buf     []byte
	mapping []byte // the whole reservation, when mapped
	peak    atomic.Uint64
	refused atomic.Bool
}

func (m *memory) Allocate(cap, max uint64) experimental.LinearMemory {
	if m.image != nil && m.image.fd >= 0 {
		if mapping, err := mapImage(m.image, m.limit); err == nil {
			m.mapping = mapping
			m.buf = mapping[:0]
			return m
		}
	}
	m.buf = make([]byte, 0, min(cap, m.limit))
	return m
}

func (m *memory) Reallocate(size uint64) []byte {
	if size > m.limit {
		m.refused.Store(true)
		return nil
	}
	switch {
	case m.mapping != nil:
		m.buf = m.mapping[:size]
	case size > uint64(cap(m.buf)):
		buf := make([]byte, size, min(max(size, 2*uint64(cap(m.buf))), m.limit))
		copy(buf, m.buf)
		m.buf = buf
	default:
		m.buf = m.buf[:size]
	}
	if size > m.peak.Load() {
		m.peak.Store(size)
	}
	return m.buf
}

// restore lays the image over the memory, undoing what instantiation wrote
// (data segments). The memory must already be as large as the image.
func (m *memory) restore() error {
	if m.mapping != nil {
		return remapImage(m.image, m.mapping)
	}
	copy(m.buf, m.image.data)
	return nil
}

func (m *memory) Free() {
	if m.mapping != nil {
		unmap(m.mapping)
		m.mapping = nil
	}
	m.buf = nil
}
