package wasm

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// shareImage moves the image into a memfd that every instance maps
// privately; the Go heap then holds no copy of it.
func shareImage(img *image) {
	fd, err := unix.MemfdCreate("wasmpy-image", unix.MFD_CLOEXEC)
	if err != nil {
		return
	}
	for b := img.data; len(b) > 0; {
		n, err := unix.Write(fd, b)
		if err != nil {
			unix.Close(fd)
			return
		}
		b = b[n:]
	}
	img.fd, img.size, img.data = fd, len(img.data), nil
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
	_, err := unix.MmapPtr(img.fd, 0, unsafePointer(mapping), uintptr(img.size),
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
