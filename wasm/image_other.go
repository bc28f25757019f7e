//go:build !linux

package wasm

import "errors"

// Without Linux's memfd, every instance gets a copy of the image.
func shareImage(*image) {}

func mapImage(*image, uint64) ([]byte, error) { return nil, errors.ErrUnsupported }

func remapImage(*image, []byte) error { return errors.ErrUnsupported }

func unmap([]byte) {}

func closeImage(*image) {}
