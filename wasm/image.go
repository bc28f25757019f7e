package wasm

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/wasmpy/wasmpy/pyhost"
)

// image is the memory of an initialised interpreter, which every run of the
// wasmpy build starts from. On Linux it lives in a file (the cached image,
// or a memfd) that instances map privately; elsewhere in data.
type image struct {
	data    []byte
	fd      int   // -1 when data holds the image
	off     int64 // where the image starts in fd
	size    int
	runCode uint32 // address of pyhost.RunMain, a C string inside the image
}

// The image file: a page-sized header (magic, run code address, size), so
// the image itself starts page-aligned and can be mapped in place.
var imageMagic = []byte("wasmpy-image-2\x00\x00")

const imageHeader = 4096

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

// readHeader checks an image file's header and returns its run code address
// and image size. The cache dir is trusted as wazero's compiled code in it
// is; the check catches a file that is not a whole image.
func readHeader(f *os.File) (uint32, int, error) {
	header := make([]byte, imageHeader)
	if _, err := io.ReadFull(f, header); err != nil {
		return 0, 0, err
	}
	if !bytes.Equal(header[:16], imageMagic) {
		return 0, 0, errors.New("not an image file")
	}
	size := binary.LittleEndian.Uint64(header[20:])
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	if uint64(fi.Size()) != imageHeader+size || size > 1<<32 {
		return 0, 0, errors.New("image file of the wrong size")
	}
	return binary.LittleEndian.Uint32(header[16:]), int(size), nil
}

// writeImage stores an image atomically: readers see the old file or the
// whole new one, never a partial one.
func writeImage(path string, data []byte, runCode uint32) error {
	header := make([]byte, imageHeader, imageHeader+len(data))
	copy(header, imageMagic)
	binary.LittleEndian.PutUint32(header[16:], runCode)
	binary.LittleEndian.PutUint64(header[20:], uint64(len(data)))
	return writeFileAtomic(path, append(header, data...))
}

func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }
