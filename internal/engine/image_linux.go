package engine

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// newImage keeps a freshly made image in a memfd that every instance maps
// privately; the Go heap then holds no copy of it.
func newImage(data []byte, runCode uint32) *image {
	img := &image{data: data, fd: -1, size: len(data), runCode: runCode}
	fd, err := unix.MemfdCreate("wasmpy-image", unix.MFD_CLOEXEC)
	if err != nil {
		return img
	}
	for b := data; len(b) > 0; {
		n, err := unix.Write(fd, b)
		if err != nil {
			unix.Close(fd)
			return img
		}
		b = b[n:]
	}
	img.fd, img.data = fd, nil
	return img
}

// openImage maps a cached image file in place: nothing is read, and the
// pages come from the page cache, shared by every process that maps them.
func openImage(path string) (*image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	img, err := readHeader(f)
	if err != nil {
		return nil, err
	}
	if img.fd, err = unix.Dup(int(f.Fd())); err != nil {
		return nil, err
	}
	unix.CloseOnExec(img.fd)
	return img, nil
}

// mapImage reserves limit bytes (committed only when touched) and maps the
// image privately over their start.
func mapImage(img *image, limit uint64) ([]byte, error) {
	if uint64(img.size) > limit {
		return nil, fmt.Errorf("image larger than the memory limit")
	}
	mapping, err := unix.Mmap(-1, 0, int(limit), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, err
	}
	if err := remapImage(img, mapping); err != nil {
		unix.Munmap(mapping)
		return nil, err
	}
	return mapping, nil
}

// remapImage replaces the start of mapping with a fresh private view of the
// image, discarding the pages written since.
func remapImage(img *image, mapping []byte) error {
	if img.size == 0 {
		return nil
	}
	_, err := unix.MmapPtr(img.fd, img.off, unsafePointer(mapping), uintptr(img.size),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED)
	return err
}

func unmap(mapping []byte) { unix.Munmap(mapping) }

// prefault copies the image's hot pages into mapping ahead of a run, one
// madvise per run of pages (Linux 5.14 and later; earlier kernels refuse
// the advice and the run faults the pages itself).
func prefault(img *image, mapping []byte) {
	for _, r := range img.hot {
		if unix.Madvise(mapping[r.start*pageSize:(r.start+r.n)*pageSize], unix.MADV_POPULATE_WRITE) != nil {
			return
		}
	}
}

// writtenPages reads from /proc/self/pagemap which of the first pages of
// mapping were written: those have become private (anonymous) copies, in
// memory or swapped out, while the pages only read still come from the
// image file (or the zero page). ok is false when the kernel does not say.
func writtenPages(mapping []byte, pages int) (runs []pageRun, ok bool) {
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return nil, false
	}
	defer f.Close()
	entries := make([]byte, 8*pages)
	first := int64(uintptr(unsafePointer(mapping)) / pageSize)
	if _, err := f.ReadAt(entries, 8*first); err != nil {
		return nil, false
	}
	const present, swapped, fileOrShared = 1 << 63, 1 << 62, 1 << 61
	for i := range pages {
		e := binary.LittleEndian.Uint64(entries[8*i:])
		if e&swapped == 0 && (e&present == 0 || e&fileOrShared != 0) {
			continue
		}
		if n := len(runs); n > 0 && runs[n-1].start+runs[n-1].n == uint32(i) {
			runs[n-1].n++
			continue
		}
		runs = append(runs, pageRun{start: uint32(i), n: 1})
	}
	return runs, true
}

// viewImage maps the image read-only and shared: the pages a session's
// state is compared with, straight from the page cache.
func viewImage(img *image) ([]byte, error) {
	if img.fd < 0 || img.size == 0 {
		return img.data, nil
	}
	return unix.Mmap(img.fd, img.off, img.size, unix.PROT_READ, unix.MAP_SHARED)
}

func closeImage(img *image) {
	if img.fd >= 0 {
		unix.Close(img.fd)
		img.fd = -1
	}
}
