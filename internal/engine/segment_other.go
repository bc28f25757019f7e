//go:build !linux

package engine

import "errors"

// segment holds pages of session states (see segment_linux.go); without
// memfds, in memory.
type segment struct {
	fd   int
	data []byte
}

func newSegment(chunks [][]byte) (*segment, error) { return dataSegment(chunks), nil }

func mapSegment(*segment, uint32, []byte) error { return errors.ErrUnsupported }

func (seg *segment) readRun(dst []byte, off uint32) { copy(dst, seg.data[int(off)*pageSize:]) }
