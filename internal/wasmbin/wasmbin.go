// Package wasmbin makes the one structural edit the snapshot start needs:
// a module whose active data segments are empty, so instantiating it copies
// nothing into a memory the snapshot image is about to replace.
package wasmbin

import (
	"errors"
	"fmt"
)

// Segment is an active data segment: bytes written at Offset of memory 0
// when a module is instantiated.
type Segment struct {
	Offset uint32
	Data   []byte
}

// DropActiveData returns a copy of wasm whose active data segments hold no
// bytes, and the segments it emptied, so the caller can write them itself.
// It also checks what restoring a snapshot of linear memory relies on: that
// the module defines at most one mutable global (the stack pointer, which is
// back at its start whenever the host has control).
func DropActiveData(wasm []byte) ([]byte, []Segment, error) {
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" || string(wasm[4:8]) != "\x01\x00\x00\x00" {
		return nil, nil, errors.New("wasmbin: not a wasm module")
	}
	out := append(make([]byte, 0, len(wasm)), wasm[:8]...)
	var segments []Segment
	r := &reader{b: wasm, pos: 8}
	for r.pos < len(r.b) {
		id, err := r.byte()
		if err != nil {
			return nil, nil, err
		}
		size, err := r.u32()
		if err != nil {
			return nil, nil, err
		}
		start := r.pos
		if uint64(start)+uint64(size) > uint64(len(r.b)) {
			return nil, nil, fmt.Errorf("wasmbin: section %d at %#x runs past the end", id, start)
		}
		body := r.b[start : start+int(size)]
		r.pos += int(size)
		switch id {
		case 6:
			if err := checkGlobals(body); err != nil {
				return nil, nil, err
			}
		case 11:
			var err error
			if body, segments, err = emptyData(body); err != nil {
				return nil, nil, err
			}
		}
		out = append(out, id)
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	return out, segments, nil
}

func checkGlobals(body []byte) error {
	r := &reader{b: body}
	n, err := r.u32()
	if err != nil {
		return err
	}
	mutable := 0
	for range n {
		if _, err := r.byte(); err != nil { // value type
			return err
		}
		mut, err := r.byte()
		if err != nil {
			return err
		}
		if mut == 1 {
			mutable++
		}
		if _, _, err := r.constExpr(); err != nil {
			return err
		}
	}
	if mutable > 1 {
		return fmt.Errorf("wasmbin: the module defines %d mutable globals; a memory snapshot would miss their state", mutable)
	}
	return nil
}

// emptyData rewrites a data section with every active segment emptied.
func emptyData(body []byte) ([]byte, []Segment, error) {
	r := &reader{b: body}
	n, err := r.u32()
	if err != nil {
		return nil, nil, err
	}
	out := appendU32(nil, n)
	var segments []Segment
	for range n {
		flags, err := r.u32()
		if err != nil {
			return nil, nil, err
		}
		out = appendU32(out, flags)
		if flags == 2 {
			mem, err := r.u32()
			if err != nil {
				return nil, nil, err
			}
			if mem != 0 {
				return nil, nil, fmt.Errorf("wasmbin: data segment for memory %d", mem)
			}
			out = appendU32(out, mem)
		}
		var offset uint32
		if flags == 0 || flags == 2 {
			exprStart := r.pos
			var plain bool
			if offset, plain, err = r.constExpr(); err != nil {
				return nil, nil, err
			}
			if !plain {
				return nil, nil, errors.New("wasmbin: a data segment offset is not an i32.const")
			}
			out = append(out, r.b[exprStart:r.pos]...)
		} else if flags != 1 {
			return nil, nil, fmt.Errorf("wasmbin: data segment flags %d", flags)
		}
		size, err := r.u32()
		if err != nil {
			return nil, nil, err
		}
		if uint64(r.pos)+uint64(size) > uint64(len(r.b)) {
			return nil, nil, errors.New("wasmbin: data segment runs past its section")
		}
		data := r.b[r.pos : r.pos+int(size)]
		r.pos += int(size)
		if flags == 1 { // passive: memory.init may use it at run time
			out = appendU32(out, size)
			out = append(out, data...)
			continue
		}
		segments = append(segments, Segment{Offset: offset, Data: data})
		out = appendU32(out, 0)
	}
	return out, segments, nil
}

type reader struct {
	b   []byte
	pos int
}

var errEOF = errors.New("wasmbin: unexpected end of module")

func (r *reader) byte() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, errEOF
	}
	r.pos++
	return r.b[r.pos-1], nil
}

func (r *reader) u32() (uint32, error) {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		v |= uint32(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, nil
		}
	}
	return 0, errors.New("wasmbin: LEB128 too long")
}

func (r *reader) sleb() (int64, error) {
	var v int64
	for shift := 0; shift < 70; shift += 7 {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		v |= int64(c&0x7f) << shift
		if c&0x80 == 0 {
			if shift < 57 && c&0x40 != 0 {
				v |= -1 << (shift + 7)
			}
			return v, nil
		}
	}
	return 0, errors.New("wasmbin: LEB128 too long")
}

// constExpr reads a constant expression; plain says it is a lone
// i32.const, whose value is returned (an offset we can apply ourselves).
func (r *reader) constExpr() (value uint32, plain bool, err error) {
	ops := 0
	for {
		op, err := r.byte()
		if err != nil {
			return 0, false, err
		}
		switch op {
		case 0x0b: // end
			return value, plain && ops == 1, nil
		case 0x41, 0x42: // i32.const, i64.const
			v, err := r.sleb()
			if err != nil {
				return 0, false, err
			}
			value, plain = uint32(v), op == 0x41
		case 0x23: // global.get
			if _, err := r.u32(); err != nil {
				return 0, false, err
			}
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended-const arithmetic
		default:
			return 0, false, fmt.Errorf("wasmbin: opcode %#x in a constant expression", op)
		}
		ops++
	}
}

func appendU32(dst []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			c |= 0x80
		}
		dst = append(dst, c)
		if v == 0 {
			return dst
		}
	}
}
