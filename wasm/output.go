package wasm

import (
	"bytes"
	"io"
	"sync"
)

// capture keeps the first limit bytes written to a guest stream, and hands
// every write to stream, when there is one, as it happens. Past the limit
// it drops the rest and calls full once, which stops the run. A stream that
// fails gets nothing more; the capture goes on.
type capture struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	limit     int
	truncated bool
	full      func()
	stream    io.Writer
	sealed    bool // the run has its outcome: later writes are dropped
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sealed {
		return len(p), nil
	}
	if c.stream != nil {
		if _, err := c.stream.Write(p); err != nil {
			c.stream = nil
		}
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

// seal ends the capture: what a stopped instance still writes, before it
// unwinds, reaches neither the outcome nor the stream.
func (c *capture) seal() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sealed = true
}

func (c *capture) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Bytes()
}
