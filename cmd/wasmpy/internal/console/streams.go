package console

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// streamDelay is the longest the script's output waits in the CLI's
// buffer: output appears as the script writes it, give or take this, while
// a script printing a million lines costs a few thousand writes, not
// millions.
const streamDelay = 20 * time.Millisecond

// Streams passes a run's stdout and stderr on to the CLI's own, in the
// order the script wrote them: switching from one stream to the other
// flushes the first.
type Streams struct {
	mu        sync.Mutex
	out, err  *bufio.Writer
	last      *bufio.Writer // the stream written last, holding unflushed bytes
	scheduled bool
	midLine   bool // the last byte written was not a newline
}

func NewStreams(stdout, stderr io.Writer) *Streams {
	return &Streams{out: bufio.NewWriterSize(stdout, 64<<10), err: bufio.NewWriterSize(stderr, 64<<10)}
}

// Stdout and Stderr are the writers for wasmpy.Job.
func (s *Streams) Stdout() io.Writer { return streamWriter{s, s.out} }
func (s *Streams) Stderr() io.Writer { return streamWriter{s, s.err} }

type streamWriter struct {
	s *Streams
	w *bufio.Writer
}

func (sw streamWriter) Write(p []byte) (int, error) {
	s := sw.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last != nil && s.last != sw.w {
		s.last.Flush()
	}
	s.last = sw.w
	if len(p) > 0 {
		s.midLine = p[len(p)-1] != '\n'
	}
	if !s.scheduled {
		s.scheduled = true
		time.AfterFunc(streamDelay, s.timedFlush)
	}
	return sw.w.Write(p)
}

func (s *Streams) timedFlush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scheduled = false
	s.flushLocked()
}

// AtLineStart reports whether the output so far ends a line, so that a
// message of wasmpy's own can start on a line of its own.
func (s *Streams) AtLineStart() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.midLine
}

// Flush writes out what is buffered; call it once the run has ended.
func (s *Streams) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
}

func (s *Streams) flushLocked() {
	if s.last != nil {
		s.last.Flush()
		s.last = nil
	}
}
