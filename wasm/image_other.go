//go:build !linux

package wasm

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
	runCode, size, err := readHeader(f)
	if err != nil {
		return nil, err
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, err
	}
	return newImage(data, runCode), nil
}

func mapImage(*image, uint64) ([]byte, error) { return nil, errors.ErrUnsupported }

func remapImage(*image, []byte) error { return errors.ErrUnsupported }

func unmap([]byte) {}

func closeImage(*image) {}
