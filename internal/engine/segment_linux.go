package engine

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// segment holds pages of session states: in a memfd that turns map
// privately, closed once no state refers to it; in data when no memfd
// could be made.
type segment struct {
	fd   int
	data []byte
}

// mappedSegment is the size from which a segment is a memfd: smaller ones
// cost less to copy in than to map.
const mappedSegment = 4 << 20

// newSegment stores the chunks, each a whole number of pages, one after
// the other.
func newSegment(chunks [][]byte) (*segment, error) {
	n := 0
	for _, c := range chunks {
		n += len(c)
	}
	if n < mappedSegment {
		return dataSegment(chunks), nil
	}
	fd, err := unix.MemfdCreate("wasmpy-session", unix.MFD_CLOEXEC)
	if err != nil {
		return dataSegment(chunks), nil
	}
	for _, c := range chunks {
		for len(c) > 0 {
			n, err := unix.Write(fd, c)
			if err != nil {
				unix.Close(fd)
				return nil, err
			}
			c = c[n:]
		}
	}
	seg := &segment{fd: fd}
	runtime.AddCleanup(seg, func(fd int) { unix.Close(fd) }, fd)
	return seg, nil
}

// mapSegment maps len(dst) bytes of seg from page off privately over dst.
// The mapping holds the file open; seg must stay alive until it is made,
// or its cleanup could close the fd (and the number be reused) first.
func mapSegment(seg *segment, off uint32, dst []byte) error {
	_, err := unix.MmapPtr(seg.fd, int64(off)*pageSize, unsafePointer(dst), uintptr(len(dst)),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED)
	runtime.KeepAlive(seg)
	return err
}

// readRun copies len(dst) bytes of seg from page off into dst.
func (seg *segment) readRun(dst []byte, off uint32) {
	if seg.fd < 0 {
		copy(dst, seg.data[int(off)*pageSize:])
		return
	}
	for at := int64(off) * pageSize; len(dst) > 0; {
		n, err := unix.Pread(seg.fd, dst, at)
		if err != nil || n == 0 {
			clear(dst) // a memfd we wrote cannot come up short; never leave stale bytes
			return
		}
		dst, at = dst[n:], at+int64(n)
	}
	runtime.KeepAlive(seg) // see mapSegment
}
