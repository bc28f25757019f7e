package engine

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"
)

// output is one guest stream. Every write goes through to w, if any, as
// the guest makes it, and the first keep bytes are captured for the
// Outcome. Past limit bytes in all (limit < 0: none) the rest is dropped
// and full is called once, which stops the run. A w that fails gets
// nothing more; the capture goes on.
type output struct {
	keep   int
	limit  int64
	full   func()
	sealed atomic.Bool // the run has its outcome: later writes are dropped

	mu        sync.Mutex
	buf       bytes.Buffer
	written   int64
	truncated bool

	// The stream has a lock of its own: a writer that blocks holds up the
	// guest writing to it, never the outcome of a run that has stopped.
	streamMu sync.Mutex
	w        io.Writer
}

func (o *output) Write(p []byte) (int, error) {
	n := len(p)
	if o.sealed.Load() {
		return n, nil
	}
	o.mu.Lock()
	if o.sealed.Load() {
		o.mu.Unlock()
		return n, nil
	}
	if o.limit >= 0 && o.written+int64(n) > o.limit {
		p = p[:max(o.limit-o.written, 0)]
		if !o.truncated {
			o.truncated = true
			o.full()
		}
	}
	o.written += int64(len(p))
	if room := o.keep - o.buf.Len(); len(p) <= room {
		o.buf.Write(p)
	} else {
		o.buf.Write(p[:max(room, 0)])
		o.truncated = true
	}
	o.mu.Unlock()

	if len(p) > 0 {
		o.streamMu.Lock()
		if o.w != nil {
			if _, err := o.w.Write(p); err != nil {
				o.w = nil
			}
		}
		o.streamMu.Unlock()
	}
	return n, nil
}

// seal ends the output and returns what it kept and whether it cut the
// rest: what a stopped instance still writes, before it unwinds, reaches
// neither the outcome nor the stream.
func (o *output) seal() ([]byte, bool) {
	o.sealed.Store(true)
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Bytes(), o.truncated
}

// bytes is what the output holds so far.
func (o *output) bytes() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Bytes()
}

// reportCut passes a plain WASI build's stderr on up to the runner's
// report, which starts with the run's nonce (see cutReport): the report is
// for the host, not the script's output.
type reportCut struct {
	w     io.Writer
	nonce []byte
	cut   bool
}

func (r *reportCut) Write(p []byte) (int, error) {
	if r.cut {
		return len(p), nil
	}
	q := p
	if i := bytes.Index(p, r.nonce); i >= 0 { // the runner writes it whole, after a newline
		r.cut, q = true, bytes.TrimSuffix(p[:i], []byte("\n"))
	}
	if len(q) > 0 {
		if _, err := r.w.Write(q); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}
