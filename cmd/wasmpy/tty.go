package main

import (
	"bytes"
	"io"
	"sync"
	"syscall"

	"golang.org/x/term"
)

// fder is a stream with a file descriptor: os.File, and the writers here.
type fder interface{ Fd() uintptr }

func isTerminal(s any) bool {
	f, ok := s.(fder)
	return ok && term.IsTerminal(int(f.Fd()))
}

// terminal is wasmpy's own terminal, when its stdin and stdout are one.
// An interactive session edits its lines there, with history, as python3's
// REPL does with readline: the script's prompt (what it wrote since its
// last newline) becomes the editor's, and the finished line its stdin.
type terminal struct {
	fd     int
	in     io.Reader
	out    io.Writer
	saved  *term.State
	editor *term.Terminal
	ctrlC  bool // the editor's last EOF was a Ctrl-C

	mu   sync.Mutex
	tail []byte

	// flush writes out the script's output the CLI holds back, prompt
	// included; onRead runs when the script asks for a line; onCtrlC when
	// Ctrl-C is typed while editing one (the terminal is raw then: no SIGINT).
	flush, onRead, onCtrlC func()
}

func newTerminal(in io.Reader, out io.Writer, flush func()) *terminal {
	if !isTerminal(in) || !isTerminal(out) {
		return nil
	}
	fd := int(in.(fder).Fd())
	saved, err := term.GetState(fd)
	if err != nil {
		return nil
	}
	t := &terminal{fd: fd, in: in, out: out, saved: saved, flush: flush, onRead: func() {}, onCtrlC: func() {}}
	t.editor = t.newEditor()
	return t
}

func (t *terminal) newEditor() *term.Terminal {
	return term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{ctrlCReader{t.in, t}, t.out}, "")
}

// restore puts the terminal back as it was found: a run can end (SIGTERM)
// in the middle of an edit, in raw mode.
func (t *terminal) restore() { term.Restore(t.fd, t.saved) }

// promptWriter writes the script's stdout to w and remembers its last
// unfinished line.
func (t *terminal) promptWriter(w io.Writer) io.Writer { return &promptWriter{w, t} }

type promptWriter struct {
	w io.Writer
	t *terminal
}

func (p *promptWriter) Write(b []byte) (int, error) {
	p.t.mu.Lock()
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		p.t.tail = append(p.t.tail[:0], b[i+1:]...)
	} else {
		p.t.tail = append(p.t.tail, b...)
	}
	p.t.mu.Unlock()
	return p.w.Write(b)
}

// lineReader is the script's stdin: lines from the editor.
func (t *terminal) lineReader() io.Reader { return &lineReader{t: t} }

type lineReader struct {
	t   *terminal
	buf []byte
}

func (r *lineReader) Read(p []byte) (int, error) {
	if len(r.buf) == 0 {
		line, err := r.t.readLine()
		if err != nil {
			return 0, err
		}
		r.buf = append([]byte(line), '\n')
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// readLine edits one line after the script's prompt. Ctrl-C fails it with
// EINTR, once KeyboardInterrupt is on its way to the script.
func (t *terminal) readLine() (string, error) {
	t.flush()
	t.onRead()
	t.mu.Lock()
	prompt := string(t.tail)
	t.tail = t.tail[:0]
	t.mu.Unlock()
	raw, err := term.MakeRaw(t.fd)
	if err != nil {
		return "", err
	}
	if w, h, err := term.GetSize(t.fd); err == nil && w > 0 {
		t.editor.SetSize(w, h)
	}
	// The editor draws the prompt itself, so that it knows where it is.
	io.WriteString(t.out, "\r\x1b[K")
	t.editor.SetPrompt(prompt)
	t.ctrlC = false
	line, err := t.editor.ReadLine()
	// Restored before the script hears of a Ctrl-C: what it prints then
	// (KeyboardInterrupt, its next prompt) must not meet a raw terminal,
	// which would not turn its newlines into line starts.
	term.Restore(t.fd, raw)
	if err == io.EOF && t.ctrlC {
		// The editor keeps the abandoned line: start afresh, with the history.
		history := t.editor.History
		t.editor = t.newEditor()
		t.editor.History = history
		t.onCtrlC()
		return "", syscall.EINTR
	}
	return line, err
}

// ctrlCReader notes a Ctrl-C the editor reads, which it reports as EOF.
type ctrlCReader struct {
	r io.Reader
	t *terminal
}

func (c ctrlCReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if bytes.IndexByte(p[:n], 3) >= 0 {
		c.t.ctrlC = true
	}
	return n, err
}
