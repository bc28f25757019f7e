package wasm

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
)

// State is the memory a session's turn left behind, kept as the pages that
// differ from the engine's image. It is immutable, so forks share it, and
// applies only to an engine whose image has its key.
type State struct {
	key  string
	size uint64    // bytes of linear memory
	runs []pageRun // ascending, disjoint
	data []byte    // the runs' pages, in order

	hashOnce sync.Once
	hash     string
}

// Key is the image the state applies to (see Engine.Key).
func (s *State) Key() string { return s.key }

// Bytes is what the state holds: the pages that differ from the image.
func (s *State) Bytes() int { return len(s.data) }

// MemorySize is the linear memory the state needs, in bytes.
func (s *State) MemorySize() uint64 { return s.size }

// Hash is the hex SHA-256 of the state: equal states hash equal, whatever
// their history. Computed once, when first asked.
func (s *State) Hash() string {
	s.hashOnce.Do(func() {
		h := sha256.New()
		h.Write(s.appendLayout(nil))
		h.Write(s.data)
		s.hash = hex.EncodeToString(h.Sum(nil))
	})
	return s.hash
}

// appendLayout appends the memory size and the page runs.
func (s *State) appendLayout(b []byte) []byte {
	b = binary.LittleEndian.AppendUint64(b, s.size)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s.runs)))
	for _, r := range s.runs {
		b = binary.LittleEndian.AppendUint32(b, r.start)
		b = binary.LittleEndian.AppendUint32(b, r.n)
	}
	return b
}

// MarshalBinary encodes the state's layout and pages (not its key: the
// caller keeps that beside it, to check it before decoding).
func (s *State) MarshalBinary() ([]byte, error) {
	return append(s.appendLayout(make([]byte, 0, 12+8*len(s.runs)+len(s.data))), s.data...), nil
}

// UnmarshalState decodes what MarshalBinary made, for the image of key,
// checking that every page lies inside the memory it claims.
func UnmarshalState(key string, b []byte) (*State, error) {
	bad := func(what string) (*State, error) { return nil, errors.New("wasmpy: session state: " + what) }
	if len(b) < 12 {
		return bad("truncated")
	}
	s := &State{key: key, size: binary.LittleEndian.Uint64(b)}
	n := binary.LittleEndian.Uint32(b[8:])
	b = b[12:]
	if s.size > maxMemory || s.size%65536 != 0 {
		return bad(fmt.Sprintf("memory size %d is not a whole number of wasm pages within 4 GiB", s.size))
	}
	if uint64(n)*8 > uint64(len(b)) {
		return bad("truncated page table")
	}
	var pages, next uint64
	for range n {
		r := pageRun{start: binary.LittleEndian.Uint32(b), n: binary.LittleEndian.Uint32(b[4:])}
		b = b[8:]
		if r.n == 0 || uint64(r.start) < next || uint64(r.start)+uint64(r.n) > s.size/pageSize {
			return bad("page table out of order or outside the memory")
		}
		next = uint64(r.start) + uint64(r.n)
		pages += uint64(r.n)
		s.runs = append(s.runs, r)
	}
	if uint64(len(b)) != pages*pageSize {
		return bad(fmt.Sprintf("%d bytes of pages for %d pages", len(b), pages))
	}
	s.data = b
	return s, nil
}

// apply writes the state's pages over mem, which holds the image and is
// already s.size bytes long.
func (s *State) apply(mem []byte) {
	off := 0
	for _, r := range s.runs {
		n := int(r.n) * pageSize
		copy(mem[int(r.start)*pageSize:], s.data[off:off+n])
		off += n
	}
}

// capture makes the state of mem, an instance's memory after a turn: the
// pages that differ from the image.
// The kernel says which pages were written; without it every page is
// compared.
func (e *Engine) capture(mem *memory) (*State, error) {
	base, err := e.baseView()
	if err != nil {
		return nil, err
	}
	buf := mem.buf
	pages := len(buf) / pageSize
	candidates, ok := []pageRun(nil), false
	if mem.mapping != nil {
		candidates, ok = writtenPages(mem.mapping, pages)
	}
	if !ok {
		candidates = []pageRun{{0, uint32(pages)}}
	}
	s := &State{key: e.key, size: uint64(len(buf))}
	if ok {
		n := 0
		for _, c := range candidates {
			n += int(c.n)
		}
		s.data = make([]byte, 0, n*pageSize)
	}
	var zero [pageSize]byte
	for _, c := range candidates {
		for i := c.start; i < c.start+c.n; i++ {
			page := buf[int(i)*pageSize : int(i+1)*pageSize]
			want := zero[:]
			if int(i+1)*pageSize <= len(base) {
				want = base[int(i)*pageSize : int(i+1)*pageSize]
			}
			if bytes.Equal(page, want) {
				continue
			}
			if n := len(s.runs); n > 0 && s.runs[n-1].start+s.runs[n-1].n == i {
				s.runs[n-1].n++
			} else {
				s.runs = append(s.runs, pageRun{start: i, n: 1})
			}
			s.data = append(s.data, page...)
		}
	}
	return s, nil
}

// baseView is the image, readable, for capture to compare pages with.
func (e *Engine) baseView() ([]byte, error) {
	e.baseOnce.Do(func() {
		e.base, e.baseErr = viewImage(e.image)
		if e.baseErr != nil {
			e.baseErr = fmt.Errorf("wasmpy: viewing the image: %w", e.baseErr)
		}
	})
	return e.base, e.baseErr
}
