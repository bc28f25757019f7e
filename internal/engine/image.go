package engine

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

	"github.com/wasmpy/wasmpy/assets"
	"github.com/wasmpy/wasmpy/internal/pyhost"
)

// image is the memory of an initialised interpreter, which every run of the
// core build starts from. On Linux it lives in a file (the cached image,
// or a memfd) that instances map privately; elsewhere in data.
type image struct {
	data    []byte
	fd      int   // -1 when data holds the image
	off     int64 // where the image starts in fd
	size    int
	runCode uint32 // address of pyhost.RunMain, a C string inside the image

	// hot are the pages of the image a small run writes: a parked instance
	// copies them in ahead, with one call per run of pages, so the run
	// takes no page fault for them (each one is costly in a VM). Pages a
	// run only reads are left to fault: the kernel maps them sixteen at a
	// time, and populating them ahead costs more than it saves.
	hot []pageRun
}

// pageRun is n pages of the image from page start.
type pageRun struct{ start, n uint32 }

// The image file: a header (magic, run code address, image size, hot page
// runs) padded to whole pages, so the image itself starts page-aligned and
// can be mapped in place.
var imageMagic = []byte("wasmpy-image-4\x00\x00")

const (
	pageSize       = 4096
	imageFixedSize = 32 // magic, run code, size, number of hot runs
)

// imageKey identifies what initialisation makes: anything that changes
// what it does changes the key. The image holds what the standard library
// looked like (imported modules, the import system's directory caches), so
// its zip is part of the key, as are the site's contents and the modules
// preloaded from it. A session's state applies only to the image of its key.
func imageKey(interp *assets.Interpreter, siteKey, preloaded string) string {
	h := sha256.New()
	for _, s := range []string{interp.SHA256, interp.StdlibSHA256, pyhost.Bootstrap(preload), pyhost.RunMain, string(imageMagic),
		stdlibMount, filesMount, AppMount, siteKey, preloaded} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// imagePath names the cached image of the key's interpreter.
func imagePath(dir, key string) string {
	return filepath.Join(dir, key[:24]+".img")
}

// readHeader checks an image file's header and returns the image it
// describes, without its contents. The cache dir is trusted as wazero's
// compiled code in it is; the check catches a file that is not a whole image.
func readHeader(f *os.File) (*image, error) {
	fixed := make([]byte, imageFixedSize)
	if _, err := io.ReadFull(f, fixed); err != nil {
		return nil, err
	}
	if !bytes.Equal(fixed[:16], imageMagic) {
		return nil, errors.New("not an image file")
	}
	img := &image{fd: -1, runCode: binary.LittleEndian.Uint32(fixed[16:])}
	size := binary.LittleEndian.Uint64(fixed[20:])
	runs := binary.LittleEndian.Uint32(fixed[28:])
	img.off = headerSize(int(runs))
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if size > 1<<32 || runs > 1<<20 || uint64(fi.Size()) != uint64(img.off)+size {
		return nil, errors.New("image file of the wrong size")
	}
	img.size = int(size)
	raw := make([]byte, 8*runs)
	if _, err := io.ReadFull(f, raw); err != nil {
		return nil, err
	}
	for b := raw; len(b) > 0; b = b[8:] {
		r := pageRun{start: binary.LittleEndian.Uint32(b), n: binary.LittleEndian.Uint32(b[4:])}
		if uint64(r.start)+uint64(r.n) > size/pageSize {
			return nil, errors.New("image file with a hot page outside the image")
		}
		img.hot = append(img.hot, r)
	}
	return img, nil
}

func headerSize(runs int) int64 {
	return int64(imageFixedSize+8*runs+pageSize-1) / pageSize * pageSize
}

// writeImage stores an image atomically: readers see the old file or the
// whole new one, never a partial one.
func writeImage(path string, data []byte, img *image) error {
	n := headerSize(len(img.hot))
	header := make([]byte, imageFixedSize, n+int64(len(data)))
	copy(header, imageMagic)
	binary.LittleEndian.PutUint32(header[16:], img.runCode)
	binary.LittleEndian.PutUint64(header[20:], uint64(len(data)))
	binary.LittleEndian.PutUint32(header[28:], uint32(len(img.hot)))
	for _, r := range img.hot {
		header = binary.LittleEndian.AppendUint32(header, r.start)
		header = binary.LittleEndian.AppendUint32(header, r.n)
	}
	header = header[:n]
	return writeFileAtomic(path, append(header, data...))
}

func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }
