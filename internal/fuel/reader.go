package fuel

import (
	"fmt"
	"unicode/utf8"
)

// reader decodes the wasm binary format from one window of the input.
//
// b is always the whole input module, so every offset in an error is an
// offset into the module. A reader never looks at b outside [pos, end), and
// every constructor of a window checks that it lies inside its parent.
type reader struct {
	b   []byte
	pos int
	end int
}

// errorf returns an error naming the module offset off.
func errorf(off int, format string, args ...any) error {
	return fmt.Errorf("offset %#x: %s", off, fmt.Sprintf(format, args...))
}

// window returns a reader over the next n bytes and advances r past them.
func (r *reader) window(n uint32, what string) (*reader, error) {
	if uint64(n) > uint64(r.end-r.pos) {
		return nil, errorf(r.pos, "%s of %d bytes overruns its container (%d bytes left)", what, n, r.end-r.pos)
	}
	w := &reader{b: r.b, pos: r.pos, end: r.pos + int(n)}
	r.pos += int(n)
	return w, nil
}

func (r *reader) done() bool { return r.pos >= r.end }

// expectEnd reports an error when bytes are left in the window.
func (r *reader) expectEnd(what string) error {
	if r.pos != r.end {
		return errorf(r.pos, "%d unexpected bytes at the end of %s", r.end-r.pos, what)
	}
	return nil
}

func (r *reader) byte() (byte, error) {
	if r.pos >= r.end {
		return 0, errorf(r.pos, "unexpected end of data")
	}
	c := r.b[r.pos]
	r.pos++
	return c, nil
}

func (r *reader) skip(n int) error {
	if n > r.end-r.pos {
		return errorf(r.pos, "unexpected end of data: need %d bytes, have %d", n, r.end-r.pos)
	}
	r.pos += n
	return nil
}

// u32 decodes an unsigned LEB128 of at most 5 bytes whose value fits in 32
// bits, as the spec requires (no overlong padding beyond 5 bytes, no unused
// bits set in the last byte).
func (r *reader) u32() (uint32, error) {
	// Fast path: most LEBs in code are a single byte.
	if r.pos < r.end {
		if c := r.b[r.pos]; c < 0x80 {
			r.pos++
			return uint32(c), nil
		}
	}
	start := r.pos
	var v uint32
	for i := 0; i < 5; i++ {
		if r.pos >= r.end {
			return 0, errorf(start, "truncated LEB128")
		}
		c := r.b[r.pos]
		r.pos++
		if i == 4 && c&0xf0 != 0 {
			return 0, errorf(start, "LEB128 overflows 32 bits")
		}
		v |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, nil
		}
	}
	return 0, errorf(start, "LEB128 overflows 32 bits") // unreachable: the 5th byte check fires first
}

// sleb decodes a signed LEB128 holding a value of the given bit width (32, 33
// or 64): at most ceil(bits/7) bytes, with the unused bits of the last byte a
// sign extension of the value.
func (r *reader) sleb(bits int) (int64, error) {
	if r.pos < r.end {
		if c := r.b[r.pos]; c < 0x80 {
			r.pos++
			return int64(c) - int64(c&0x40)<<1, nil // bit 6 is the sign
		}
	}
	return r.slebSlow(bits)
}

func (r *reader) slebSlow(bits int) (int64, error) {
	start := r.pos
	maxBytes := (bits + 6) / 7
	var v int64
	for i := 0; i < maxBytes; i++ {
		if r.pos >= r.end {
			return 0, errorf(start, "truncated LEB128")
		}
		c := r.b[r.pos]
		r.pos++
		shift := uint(7 * i)
		v |= int64(c&0x7f) << shift
		if c < 0x80 {
			if i == maxBytes-1 {
				// Bits of this byte at or above the value's width must all equal
				// the value's sign bit.
				used := uint(bits) - shift       // bits of the value held in this byte, 1..7
				rest := (c & 0x7f) >> (used - 1) // the sign bit and the bits above it
				if rest != 0 && rest != 0x7f>>(used-1) {
					return 0, errorf(start, "signed LEB128 overflows %d bits", bits)
				}
			}
			if shift+7 < 64 && c&0x40 != 0 {
				v |= -1 << (shift + 7)
			}
			return v, nil
		}
	}
	return 0, errorf(start, "signed LEB128 longer than %d bytes", maxBytes)
}

// name decodes a length-prefixed UTF-8 string.
func (r *reader) name() (string, error) {
	start := r.pos
	n, err := r.u32()
	if err != nil {
		return "", err
	}
	w, err := r.window(n, "name")
	if err != nil {
		return "", err
	}
	s := w.b[w.pos:w.end]
	if !utf8.Valid(s) {
		return "", errorf(start, "name is not valid UTF-8")
	}
	return string(s), nil
}

// count decodes a vector length, checking that the vector can fit in what is
// left of the window when every element takes at least minSize bytes. This
// keeps a forged count from driving a long loop or a large allocation.
func (r *reader) count(minSize int, what string) (uint32, error) {
	start := r.pos
	n, err := r.u32()
	if err != nil {
		return 0, err
	}
	if uint64(n)*uint64(minSize) > uint64(r.end-r.pos) {
		return 0, errorf(start, "%s count %d does not fit in the %d bytes left", what, n, r.end-r.pos)
	}
	return n, nil
}

func appendU32(dst []byte, v uint32) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

func appendS64(dst []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(dst, c)
		}
		dst = append(dst, c|0x80)
	}
}

func appendName(dst []byte, s string) []byte {
	dst = appendU32(dst, uint32(len(s)))
	return append(dst, s...)
}
