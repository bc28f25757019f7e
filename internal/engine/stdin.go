package engine

import (
	"bytes"
	"errors"
	"io"
	"syscall"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// stdin hands the guest its stdin as it arrives. src is read in another
// goroutine, one read at a time, so a guest waiting for input (a terminal
// with nothing typed yet) still stops when its run does, and an interrupt
// reaches it; a read of src still under way then is lost with the run.
type stdin struct {
	src     io.Reader
	pending chan chunk // the read of src under way, if any
	left    []byte
	err     error // src's last word, once said
	served  bool  // an interrupt ended a guest read while src's read went on
}

type chunk struct {
	b   []byte
	err error
}

// stdinBuffer is the most one read of src asks for.
const stdinBuffer = 64 << 10

func newStdin(src io.Reader) *stdin {
	if src == nil {
		src = bytes.NewReader(nil)
	}
	return &stdin{src: src}
}

// read serves one guest read. It returns EINTR when interrupt fires first,
// which makes CPython check for the KeyboardInterrupt the host raised. A
// src that fails with EINTR (a line editor's Ctrl-C) has raised one too:
// the read waits for it, then fails the same way.
func (s *stdin) read(p []byte, done, interrupt <-chan struct{}) (int, error) {
	for len(s.left) == 0 && s.err == nil {
		if r, ok := s.src.(*bytes.Reader); ok { // never blocks: no goroutine
			return r.Read(p)
		}
		if s.pending == nil {
			s.pending = make(chan chunk, 1)
			go func(src io.Reader, c chan<- chunk) {
				b := make([]byte, stdinBuffer)
				n, err := src.Read(b)
				c <- chunk{b[:n], err}
			}(s.src, s.pending)
		}
		select {
		case c := <-s.pending:
			s.pending = nil
			if errors.Is(c.err, syscall.EINTR) { // src has raised an interrupt
				if s.served {
					s.served = false // and the read has served it already
					continue
				}
				select {
				case <-interrupt:
					return 0, experimentalsys.EINTR
				case <-done:
					return 0, experimentalsys.EIO
				}
			}
			s.left, s.err, s.served = c.b, c.err, false
		case <-interrupt:
			s.served = true // the read under way may end by reporting it
			return 0, experimentalsys.EINTR
		case <-done:
			return 0, experimentalsys.EIO
		}
	}
	if len(s.left) > 0 {
		n := copy(p, s.left)
		s.left = s.left[n:]
		return n, nil
	}
	err := s.err
	if err != io.EOF {
		s.err = nil // a transient error: the next read tries again
	}
	return 0, err
}
