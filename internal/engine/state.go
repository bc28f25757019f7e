package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// State is the memory a session's turn left behind, kept as the pages that
// differ from the engine's image. It is immutable, so forks share it, and
// applies only to an engine whose image has its key.
//
// Its pages live in segments. A large one is a memfd (on Linux), which a
// turn maps privately over the image as it maps the image: the turn copies
// nothing and faults in only what it touches. A small one, what a turn
// wrote, stays in memory and is copied in; the next turn writes most of
// those pages again anyway. A turn's new state shares the segments of the
// old one for the pages the turn did not write, and puts the pages it
// wrote in a new segment; when that leaves the pages spread over too many
// segments or runs, capture copies them into one.
type State struct {
	key     string
	size    uint64      // bytes of linear memory
	pages   []statePage // ascending by index
	extents []extent    // pages, coalesced into runs of one segment each
	segs    int         // distinct segments
	small   int         // of which in memory (see newSegment)

	sums     [][sha256.Size]byte // per page: set by capture, or by Hash
	hashed   atomic.Bool         // Hash has run: sums are set and final
	hashOnce sync.Once
	hash     string
}

// statePage is one page of a State: page idx of memory is page off of seg.
type statePage struct {
	idx, off uint32
	seg      *segment
}

// extent is n pages of memory from page start, held from page off of seg.
type extent struct {
	start, n, off uint32
	seg           *segment
}

// Limits past which capture compacts a state into one segment, so that a
// turn maps a bounded number of runs (each one a mapping the kernel
// counts against the process's limit, 65530 by default).
const (
	maxSegments = 16
	maxExtents  = 4096
)

// Bytes is what the state holds: the pages that differ from the image.
func (s *State) Bytes() int { return len(s.pages) * pageSize }

// newState makes a state of pages (ascending), coalescing them into extents.
func newState(key string, size uint64, pages []statePage) *State {
	s := &State{key: key, size: size, pages: pages}
	seen := map[*segment]bool{}
	for _, p := range pages {
		if n := len(s.extents); n > 0 {
			e := &s.extents[n-1]
			if e.seg == p.seg && e.start+e.n == p.idx && e.off+e.n == p.off {
				e.n++
				continue
			}
		}
		s.extents = append(s.extents, extent{start: p.idx, n: 1, off: p.off, seg: p.seg})
		if !seen[p.seg] && p.seg.fd < 0 {
			s.small++
		}
		seen[p.seg] = true
	}
	s.segs = len(seen)
	return s
}

// Hash is the hex SHA-256 of the state's size and pages: equal states hash
// equal, whatever their history. A state made by a turn hashes only the
// pages the turn wrote; the others' sums come from the state before.
func (s *State) Hash() string {
	s.hashOnce.Do(func() {
		if s.sums == nil {
			s.sums = make([][sha256.Size]byte, len(s.pages))
			buf := make([]byte, pageSize)
			for i, p := range s.pages {
				p.seg.readRun(buf, p.off)
				s.sums[i] = sha256.Sum256(buf)
			}
		}
		h := sha256.New()
		h.Write(binary.LittleEndian.AppendUint64(nil, s.size))
		for i, p := range s.pages {
			h.Write(binary.LittleEndian.AppendUint32(nil, p.idx))
			h.Write(s.sums[i][:])
		}
		s.hash = hex.EncodeToString(h.Sum(nil))
		s.hashed.Store(true)
	})
	return s.hash
}

// MarshalBinary encodes the state's size, page table and pages (not its
// key: the caller keeps that beside it, to check it before decoding).
func (s *State) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, 12+8*len(s.extents)+s.Bytes())
	b = binary.LittleEndian.AppendUint64(b, s.size)
	var runs []pageRun
	for _, p := range s.pages {
		if n := len(runs); n > 0 && runs[n-1].start+runs[n-1].n == p.idx {
			runs[n-1].n++
			continue
		}
		runs = append(runs, pageRun{start: p.idx, n: 1})
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(runs)))
	for _, r := range runs {
		b = binary.LittleEndian.AppendUint32(b, r.start)
		b = binary.LittleEndian.AppendUint32(b, r.n)
	}
	for _, e := range s.extents {
		at := len(b)
		b = b[:at+int(e.n)*pageSize]
		e.seg.readRun(b[at:], e.off)
	}
	return b, nil
}

// UnmarshalState decodes what MarshalBinary made, for the image of key,
// checking that every page lies inside the memory it claims.
func UnmarshalState(key string, b []byte) (*State, error) {
	bad := func(what string) (*State, error) { return nil, errors.New("wasmpy: session state: " + what) }
	if len(b) < 12 {
		return bad("truncated")
	}
	size := binary.LittleEndian.Uint64(b)
	n := binary.LittleEndian.Uint32(b[8:])
	b = b[12:]
	if size > maxMemory || size%65536 != 0 {
		return bad(fmt.Sprintf("memory size %d is not a whole number of wasm pages within 4 GiB", size))
	}
	if uint64(n)*8 > uint64(len(b)) {
		return bad("truncated page table")
	}
	var runs []pageRun
	var total, next uint64
	for range n {
		r := pageRun{start: binary.LittleEndian.Uint32(b), n: binary.LittleEndian.Uint32(b[4:])}
		b = b[8:]
		if r.n == 0 || uint64(r.start) < next || uint64(r.start)+uint64(r.n) > size/pageSize {
			return bad("page table out of order or outside the memory")
		}
		next = uint64(r.start) + uint64(r.n)
		total += uint64(r.n)
		runs = append(runs, r)
	}
	if uint64(len(b)) != total*pageSize {
		return bad(fmt.Sprintf("%d bytes of pages for %d pages", len(b), total))
	}
	seg, err := newSegment([][]byte{b})
	if err != nil {
		return nil, err
	}
	pages := make([]statePage, 0, total)
	for _, r := range runs {
		for i := r.start; i < r.start+r.n; i++ {
			pages = append(pages, statePage{idx: i, off: uint32(len(pages)), seg: seg})
		}
	}
	return newState(key, size, pages), nil
}

// apply lays the state's pages over mem, which holds the image and is
// already s.size bytes long: mapped from their segments where the memory
// is a mapping, else copied.
func (s *State) apply(mem *memory) error {
	for _, e := range s.extents {
		dst := mem.buf[int(e.start)*pageSize : int(e.start+e.n)*pageSize]
		if mem.mapping != nil && e.seg.fd >= 0 {
			if err := mapSegment(e.seg, e.off, dst); err != nil {
				return err
			}
			continue
		}
		e.seg.readRun(dst, e.off)
	}
	return nil
}

// capture makes the state of mem, an instance's memory after a turn that
// began from from (nil: the image). Where the kernel says which pages the
// turn wrote, only those are read: a page it did not write is as from had
// it. Pages apply copied in count as written; one that has not changed
// keeps its place in from's segment. Without the kernel's word, every page
// is compared with the image.
func (e *Engine) capture(mem *memory, from *State) (*State, error) {
	base, err := e.baseView()
	if err != nil {
		return nil, err
	}
	buf := mem.buf
	pages := len(buf) / pageSize
	written, ok := []pageRun(nil), false
	if mem.mapping != nil {
		written, ok = writtenPages(mem.mapping, pages)
	}
	if !ok {
		written, from = []pageRun{{0, uint32(pages)}}, nil
	}
	var old []statePage
	var oldSums [][sha256.Size]byte
	if from != nil {
		old = from.pages
		if from.hashed.Load() {
			oldSums = from.sums
		}
	}
	out := make([]statePage, 0, len(old)+64)
	// The pages' sums, when from's are known: the state's Hash then reads
	// only the pages this turn changed.
	var sums [][sha256.Size]byte
	if from == nil || oldSums != nil {
		sums = make([][sha256.Size]byte, 0, cap(out))
	}
	keep := func(j int) {
		out = append(out, old[j])
		if sums != nil {
			sums = append(sums, oldSums[j])
		}
	}
	var zero, was [pageSize]byte
	var chunks [][]byte // runs of changed pages, as slices of buf
	var fresh []int     // their places in out
	j := 0              // next page of old
	for _, r := range written {
		for i := r.start; i < r.start+r.n; i++ {
			for j < len(old) && old[j].idx < i {
				keep(j)
				j++
			}
			prev := -1
			if j < len(old) && old[j].idx == i {
				prev = j
				j++
			}
			page := buf[int(i)*pageSize : int(i+1)*pageSize]
			want := zero[:]
			if int(i+1)*pageSize <= len(base) {
				want = base[int(i)*pageSize : int(i+1)*pageSize]
			}
			if bytes.Equal(page, want) {
				continue // back to the image's
			}
			if prev >= 0 && old[prev].seg.fd < 0 {
				if old[prev].seg.readRun(was[:], old[prev].off); bytes.Equal(page, was[:]) {
					keep(prev)
					continue
				}
			}
			if n := len(fresh); n > 0 && out[fresh[n-1]].idx+1 == i {
				c := &chunks[len(chunks)-1]
				*c = (*c)[:len(*c)+pageSize]
			} else {
				chunks = append(chunks, page)
			}
			fresh = append(fresh, len(out))
			out = append(out, statePage{idx: i, off: uint32(len(fresh) - 1)})
			if sums != nil {
				sums = append(sums, sha256.Sum256(page))
			}
		}
	}
	for ; j < len(old); j++ {
		keep(j)
	}
	seg, err := newSegment(chunks)
	if err != nil {
		return nil, err
	}
	for _, k := range fresh {
		out[k].seg = seg
	}
	s := newState(e.key, uint64(len(buf)), out)
	s.sums = sums
	return s.settle()
}

// settle compacts a state spread over too many segments or runs.
func (s *State) settle() (*State, error) {
	switch {
	case len(s.extents) > maxExtents || s.segs-s.small > maxSegments:
		return s.compact()
	case s.small > maxSegments:
		return s.compactSmall()
	}
	return s, nil
}

// compact copies the state's pages into one segment.
func (s *State) compact() (*State, error) {
	b, _ := s.MarshalBinary()
	c, err := UnmarshalState(s.key, b)
	if err != nil {
		return nil, err
	}
	c.sums = s.sums
	return c, nil
}

// compactSmall copies the pages of the state's in-memory segments into
// one, leaving its large ones as they are.
func (s *State) compactSmall() (*State, error) {
	var chunks [][]byte
	out := slices.Clone(s.pages)
	var moved []int
	for i, p := range out {
		if p.seg.fd >= 0 {
			continue
		}
		page := make([]byte, pageSize)
		p.seg.readRun(page, p.off)
		chunks = append(chunks, page)
		out[i].off = uint32(len(moved))
		moved = append(moved, i)
	}
	seg, err := newSegment(chunks)
	if err != nil {
		return nil, err
	}
	for _, i := range moved {
		out[i].seg = seg
	}
	c := newState(s.key, s.size, out)
	c.sums = s.sums
	return c, nil
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

// dataSegment keeps chunks in memory.
func dataSegment(chunks [][]byte) *segment {
	n := 0
	for _, c := range chunks {
		n += len(c)
	}
	data := make([]byte, 0, n)
	for _, c := range chunks {
		data = append(data, c...)
	}
	return &segment{fd: -1, data: data}
}
