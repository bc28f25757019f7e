package wasm

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/wasmpy/wasmpy/pyhost"
)

// image is the memory of an initialised interpreter, which every run of the
// wasmpy build starts from.
type image struct {
	data    []byte // nil once shared through fd
	fd      int    // a memfd holding the image, or -1
	size    int
	runCode uint32 // address of pyhost.RunMain, a C string inside the image
}

func newImage(data []byte, runCode uint32) *image {
	img := &image{data: data, fd: -1, size: len(data), runCode: runCode}
	shareImage(img)
	return img
}

// The image file: magic, run code address, SHA-256 of the data, the data.
var imageMagic = []byte("wasmpy-image-1\x00\x00")

const imageHeader = 16 + 4 + sha256.Size

// imagePath names the cached image of an interpreter: anything that changes
// what initialisation does changes the name.
func imagePath(dir, interpSHA string) string {
	h := sha256.New()
	for _, s := range []string{interpSHA, pyhost.Bootstrap(preload), pyhost.RunMain, string(imageMagic)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return filepath.Join(dir, fmt.Sprintf("%x.img", h.Sum(nil)[:12]))
}

// readImage loads a cached image; a missing one is os.ErrNotExist, a
// damaged one an error (the caller rebuilds it).
func readImage(path string) ([]byte, uint32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	if len(b) < imageHeader || !bytes.Equal(b[:16], imageMagic) {
		return nil, 0, errors.New("not an image file")
	}
	data := b[imageHeader:]
	if sum := sha256.Sum256(data); !bytes.Equal(sum[:], b[20:imageHeader]) {
		return nil, 0, errors.New("image checksum mismatch")
	}
	return data, binary.LittleEndian.Uint32(b[16:20]), nil
}

// writeImage stores an image atomically: readers see the old file or the
// whole new one.
func writeImage(path string, data []byte, runCode uint32) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".image-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	header := make([]byte, imageHeader)
	copy(header, imageMagic)
	binary.LittleEndian.PutUint32(header[16:], runCode)
	sum := sha256.Sum256(data)
	copy(header[20:], sum[:])
	if _, err := tmp.Write(header); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }
