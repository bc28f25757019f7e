//go:build !linux

package engine

import (
	"errors"
	"io"
	"os"
)

// Without Linux's memfd and private file mappings, every instance gets a
// copy of the image.
func newImage(data []byte, runCode uint32) *image {
	return &image{data: data, fd: -1, size: len(data), runCode: runCode}
}

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
	img.data = make([]byte, img.size)
	if _, err := io.ReadFull(io.NewSectionReader(f, img.off, int64(img.size)), img.data); err != nil {
		return nil, err
	}
	return img, nil
}

func mapImage(*image, uint64) ([]byte, error) { return nil, errors.ErrUnsupported }

func remapImage(*image, []byte) error { return errors.ErrUnsupported }

func unmap([]byte) {}

func closeImage(*image) {}

func prefault(*image, []byte) {}

func writtenPages([]byte, int) ([]pageRun, bool) { return nil, false }

func viewImage(img *image) ([]byte, error) { return img.data, nil }
