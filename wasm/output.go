package wasm

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"
)

// capture keeps the first limit bytes written to a guest stream, and hands
// every write to stream, when there is one, as it happens. Past the limit
// it drops the rest and calls full once, which stops the run. A stream that
// fails gets nothing more; the capture goes on.
type capture struct {
	limit  int
	full   func()
	sealed atomic.Bool // the run has its outcome: later writes are dropped

	mu        sync.Mutex
	buf       bytes.Buffer
	truncated bool

	// The stream has a lock of its own: a writer that blocks holds up the
	// guest writing to it, never the outcome of a run that has stopped.
	streamMu sync.Mutex
	stream   io.Writer
}

func (c *capture) Write(p []byte) (int, error) {
	if c.sealed.Load() {
		return len(p), nil
	}
	c.streamMu.Lock()
	if c.stream != nil {
		if _, err := c.stream.Write(p); err != nil {
			c.stream = nil
		}
	}
	c.streamMu.Unlock()

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sealed.Load() {
		return len(p), nil
	}
	room := c.limit - c.buf.Len()
	if len(p) <= room {
		return c.buf.Write(p)
	}
	c.buf.Write(p[:max(room, 0)])
	if !c.truncated {
		c.truncated = true
		c.full()
	}
	return len(p), nil
}

// seal ends the capture and returns what it kept and whether it cut the
// rest: what a stopped instance still writes, before it unwinds, reaches
// neither the outcome nor the stream.
func (c *capture) seal() ([]byte, bool) {
	c.sealed.Store(true)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Bytes(), c.truncated
}

// bytes is what the capture holds so far.
func (c *capture) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Bytes()
}
