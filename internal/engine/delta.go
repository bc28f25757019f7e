package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// A delta is what turns a state into another: the memory size, the runs
// of pages that went back to the image, and the runs of pages that
// changed, each as its XOR with what it was (the base's page, else the
// image's): a turn changes a few bytes of most pages it writes (reference
// counts, free lists), so the XOR is mostly zeros and deflates to little.
// A session saved once and then by deltas writes, per turn, what the turn
// changed instead of its whole state.
//
//	size (uint64), removed run count (uint32), changed run count (uint32)
//	the runs, each start and length (uint32 each): removed, then changed
//	the changed pages' XORs, in order

// MarshalDelta encodes what turns base (nil: the image) into s, both of
// e's image. Pages are compared by content (their SHA-256), so a state
// that only moved its pages about (compacted) has none to write.
func (e *Engine) MarshalDelta(s, base *State) ([]byte, error) {
	if s.key != e.key {
		return nil, ErrForeignState
	}
	image, err := e.baseView()
	if err != nil {
		return nil, err
	}
	var old []statePage
	var oldSums [][sha256.Size]byte
	if base != nil {
		if base.key != e.key {
			return nil, ErrForeignState
		}
		base.Hash() // sets the sums
		old, oldSums = base.pages, base.sums
	}
	s.Hash()
	var removed, changed []pageRun
	add := func(runs *[]pageRun, i uint32) {
		if n := len(*runs); n > 0 && (*runs)[n-1].start+(*runs)[n-1].n == i {
			(*runs)[n-1].n++
			return
		}
		*runs = append(*runs, pageRun{start: i, n: 1})
	}
	var fresh []int // s's pages to write
	var was []int   // the base's page each replaces, or -1
	j := 0
	for i, p := range s.pages {
		for j < len(old) && old[j].idx < p.idx {
			add(&removed, old[j].idx)
			j++
		}
		prev := -1
		if j < len(old) && old[j].idx == p.idx {
			same := oldSums[j] == s.sums[i]
			prev = j
			j++
			if same {
				continue
			}
		}
		add(&changed, p.idx)
		fresh, was = append(fresh, i), append(was, prev)
	}
	for ; j < len(old); j++ {
		add(&removed, old[j].idx)
	}
	b := make([]byte, 0, 16+8*(len(removed)+len(changed))+len(fresh)*pageSize)
	b = binary.LittleEndian.AppendUint64(b, s.size)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(removed)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(changed)))
	for _, r := range append(removed, changed...) {
		b = binary.LittleEndian.AppendUint32(b, r.start)
		b = binary.LittleEndian.AppendUint32(b, r.n)
	}
	var prev [pageSize]byte
	for k, i := range fresh {
		at := len(b)
		b = b[:at+pageSize]
		p := s.pages[i]
		p.seg.readRun(b[at:], p.off)
		if was[k] >= 0 {
			old[was[k]].seg.readRun(prev[:], old[was[k]].off)
			xor(b[at:], prev[:])
		} else {
			xor(b[at:], imagePage(image, p.idx))
		}
	}
	return b, nil
}

// imagePage is page idx of the image, or nil past its end (zeros).
func imagePage(image []byte, idx uint32) []byte {
	if int(idx+1)*pageSize > len(image) {
		return nil
	}
	return image[int(idx)*pageSize : int(idx+1)*pageSize]
}

// xor sets dst to dst XOR src; a nil src is zeros.
func xor(dst, src []byte) {
	for i := range src {
		dst[i] ^= src[i]
	}
}

// ApplyDelta decodes what MarshalDelta made and lays it over base (nil:
// e's image), checking that the runs are in order, inside the memory, and
// remove only pages base has.
func (e *Engine) ApplyDelta(base *State, b []byte) (*State, error) {
	bad := func(what string) (*State, error) { return nil, errors.New("wasmpy: session delta: " + what) }
	if base != nil && base.key != e.key {
		return nil, ErrForeignState
	}
	image, err := e.baseView()
	if err != nil {
		return nil, err
	}
	if len(b) < 16 {
		return bad("truncated")
	}
	size := binary.LittleEndian.Uint64(b)
	nr, nc := uint64(binary.LittleEndian.Uint32(b[8:])), uint64(binary.LittleEndian.Uint32(b[12:]))
	b = b[16:]
	if size > maxMemory || size%65536 != 0 {
		return bad(fmt.Sprintf("memory size %d is not a whole number of wasm pages within 4 GiB", size))
	}
	var old []statePage
	var oldSums [][sha256.Size]byte
	if base != nil {
		if size < base.size {
			return bad("the memory shrank")
		}
		base.Hash()
		old, oldSums = base.pages, base.sums
	}
	if (nr+nc)*8 > uint64(len(b)) {
		return bad("truncated page table")
	}
	runs := func(n uint64) ([]pageRun, uint64, error) {
		var out []pageRun
		var total, next uint64
		for range n {
			r := pageRun{start: binary.LittleEndian.Uint32(b), n: binary.LittleEndian.Uint32(b[4:])}
			b = b[8:]
			if r.n == 0 || uint64(r.start) < next || uint64(r.start)+uint64(r.n) > size/pageSize {
				return nil, 0, errors.New("wasmpy: session delta: page table out of order or outside the memory")
			}
			next = uint64(r.start) + uint64(r.n)
			total += uint64(r.n)
			out = append(out, r)
		}
		return out, total, nil
	}
	removed, _, err := runs(nr)
	if err != nil {
		return nil, err
	}
	changed, total, err := runs(nc)
	if err != nil {
		return nil, err
	}
	if uint64(len(b)) != total*pageSize {
		return bad(fmt.Sprintf("%d bytes of pages for %d pages", len(b), total))
	}
	rem, chg := expand(removed), expand(changed)
	// Each page is its XOR with what it was: undone in place, in a copy
	// (b may be the caller's).
	b = bytes.Clone(b)
	var prev [pageSize]byte
	j := 0
	for k, idx := range chg {
		for j < len(old) && old[j].idx < idx {
			j++
		}
		page := b[k*pageSize : (k+1)*pageSize]
		if j < len(old) && old[j].idx == idx {
			old[j].seg.readRun(prev[:], old[j].off)
			xor(page, prev[:])
		} else {
			xor(page, imagePage(image, idx))
		}
	}
	seg, err := newSegment([][]byte{b})
	if err != nil {
		return nil, err
	}
	r := 0
	out := make([]statePage, 0, len(old)+len(chg))
	sums := make([][sha256.Size]byte, 0, cap(out))
	j, r = 0, 0 // next page of old, of rem
	for k := 0; j < len(old) || k < len(chg); {
		if r < len(rem) && (j == len(old) || rem[r] < old[j].idx) {
			return bad("it removes a page the state does not have")
		}
		switch {
		case k < len(chg) && (j == len(old) || chg[k] <= old[j].idx):
			if r < len(rem) && rem[r] == chg[k] {
				return bad("a page both removed and changed")
			}
			if j < len(old) && old[j].idx == chg[k] {
				j++ // replaced
			}
			page := b[k*pageSize : (k+1)*pageSize]
			out = append(out, statePage{idx: chg[k], off: uint32(k), seg: seg})
			sums = append(sums, sha256.Sum256(page))
			k++
		case r < len(rem) && rem[r] == old[j].idx:
			r, j = r+1, j+1 // back to the image
		default:
			if uint64(old[j].idx) >= size/pageSize {
				return bad("a page outside the memory")
			}
			out = append(out, old[j])
			sums = append(sums, oldSums[j])
			j++
		}
	}
	if r < len(rem) {
		return bad("it removes a page the state does not have")
	}
	s := newState(e.key, size, out)
	s.sums = sums
	return s.settle()
}

// expand lists the pages of runs.
func expand(runs []pageRun) []uint32 {
	var out []uint32
	for _, r := range runs {
		for i := r.start; i < r.start+r.n; i++ {
			out = append(out, i)
		}
	}
	return out
}
