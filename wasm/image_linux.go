package wasm

import (
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
	runCode, size, err := readHeader(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	fd, err := unix.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		return nil, err
	}
	unix.CloseOnExec(fd)
	return &image{fd: fd, off: imageHeader, size: size, runCode: runCode}, nil
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

func closeImage(img *image) {
	if img.fd >= 0 {
		unix.Close(img.fd)
		img.fd = -1
	}
}
