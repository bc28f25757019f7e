package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"golang.org/x/term"
)

// fder is a stream with a file descriptor: os.File, and the writers here.
type fder interface{ Fd() uintptr }

func IsTerminal(s any) bool {
	f, ok := s.(fder)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Terminal is wasmpy's own terminal, when its stdin and stdout are one.
// An interactive session edits its lines there, with history, as python3's
// REPL does with readline: the script's prompt (what it wrote since its
// last newline) becomes the editor's, and the finished line its stdin.
type Terminal struct {
	fd     int
	in     io.Reader
	out    io.Writer
	saved  *term.State
	editor *term.Terminal
	ctrlC  bool // the editor's last EOF was a Ctrl-C

	mu   sync.Mutex
	tail []byte

	// Tab completion, in the REPL: Tab ends the editor's read (errComplete,
	// the line kept), the guest's REPL gets the line up to the cursor after
	// complMark, answers with the names rlcompleter finds (complAnswer),
	// and the edit goes on with what they share typed in (inject), or
	// them listed. repl says the guest's REPL reads the lines; compl is the
	// completion under way; awaiting, that its answer is due on stdout.
	repl       bool
	compl      *completion
	inject     []byte
	awaiting   bool
	pend       []byte // the start of the answer, when a write cut it
	candidates []string
	later      []byte // keys typed after a Tab, held until it is completed

	// flush writes out the script's output the CLI holds back, prompt
	// included; onRead runs when the script asks for a line; onCtrlC when
	// Ctrl-C is typed while editing one (the terminal is raw then: no SIGINT).
	flush, onRead, onCtrlC func()
}

func NewTerminal(in io.Reader, out io.Writer, flush func()) *Terminal {
	if !IsTerminal(in) || !IsTerminal(out) {
		return nil
	}
	fd := int(in.(fder).Fd())
	saved, err := term.GetState(fd)
	if err != nil {
		return nil
	}
	t := &Terminal{fd: fd, in: in, out: out, saved: saved, flush: flush, onRead: func() {}, onCtrlC: func() {}}
	t.editor = t.newEditor()
	return t
}

func (t *Terminal) newEditor() *term.Terminal {
	return term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{ctrlCReader{t.in, t}, t.out}, "")
}

// restore puts the terminal back as it was found: a run can end (SIGTERM)
// in the middle of an edit, in raw mode.
func (t *Terminal) restore() { term.Restore(t.fd, t.saved) }

// REPL makes t the guest REPL's: what the script writes to stdout since
// its last newline becomes the editor's prompt, each finished line its
// stdin, and Tab completes names at the REPL's prompts. It returns the
// job's stdout and stdin.
func (t *Terminal) REPL(stdout io.Writer) (io.Writer, io.Reader) {
	t.repl = true
	return t.promptWriter(stdout), t.lineReader()
}

// promptWriter writes the script's stdout to w and remembers its last
// unfinished line.
func (t *Terminal) promptWriter(w io.Writer) io.Writer { return &promptWriter{w, t} }

type promptWriter struct {
	w io.Writer
	t *Terminal
}

func (p *promptWriter) Write(b []byte) (int, error) {
	n := len(b)
	p.t.mu.Lock()
	if p.t.awaiting {
		b = p.t.takeAnswer(b)
	}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		p.t.tail = append(p.t.tail[:0], b[i+1:]...)
	} else {
		p.t.tail = append(p.t.tail, b...)
	}
	p.t.mu.Unlock()
	if len(b) == 0 {
		return n, nil
	}
	if _, err := p.w.Write(b); err != nil {
		return 0, err
	}
	return n, nil
}

// lineReader is the script's stdin: lines from the editor.
func (t *Terminal) lineReader() io.Reader { return &lineReader{t: t} }

type lineReader struct {
	t   *Terminal
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
func (t *Terminal) readLine() (string, error) {
	t.flush()
	t.onRead()
	t.mu.Lock()
	prompt := string(t.tail)
	t.tail = t.tail[:0]
	c, candidates := t.compl, t.candidates
	t.awaiting, t.pend, t.candidates = false, nil, nil
	t.mu.Unlock()
	raw, err := term.MakeRaw(t.fd)
	if err != nil {
		return "", err
	}
	if w, h, err := term.GetSize(t.fd); err == nil && w > 0 {
		t.editor.SetSize(w, h)
	}
	if c != nil {
		// The guest answered a Tab: the editor still has the line, and the
		// screen shows it.
		t.compl = nil
		t.complete(c, candidates)
	} else {
		// The editor draws the prompt itself, so that it knows where it is.
		io.WriteString(t.out, "\r\x1b[K")
		t.editor.SetPrompt(prompt)
		t.editor.AutoCompleteCallback = nil
		if t.repl && (prompt == ">>> " || prompt == "... ") {
			t.editor.AutoCompleteCallback = t.tab
		}
	}
	t.ctrlC = false
	line, err := t.editor.ReadLine()
	// Restored before the script hears of a Ctrl-C: what it prints then
	// (KeyboardInterrupt, its next prompt) must not meet a raw terminal,
	// which would not turn its newlines into line starts.
	term.Restore(t.fd, raw)
	if err == errComplete {
		t.mu.Lock()
		t.awaiting = true
		t.mu.Unlock()
		return complMark + t.compl.line[:t.compl.pos], nil
	}
	t.compl = nil
	if err == io.EOF && t.ctrlC {
		// The editor keeps the abandoned line: start afresh, with the history.
		history := t.editor.History
		t.compl, t.inject, t.later = nil, nil, nil // the line is abandoned, and what was typed after it
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
	t *Terminal
}

func (c ctrlCReader) Read(p []byte) (int, error) {
	if len(c.t.inject) > 0 { // a completion, typed in
		n := copy(p, c.t.inject)
		c.t.inject = c.t.inject[n:]
		return n, nil
	}
	if c.t.compl != nil {
		return 0, errComplete // the editor keeps the line while the guest is asked
	}
	var n int
	var err error
	if len(c.t.later) > 0 { // what was typed after a Tab, once it is completed
		n = copy(p, c.t.later)
		c.t.later = c.t.later[n:]
	} else {
		n, err = c.r.Read(p)
	}
	n = c.tabFirst(p, n)
	if bytes.IndexByte(p[:n], 3) >= 0 {
		c.t.ctrlC = true
	}
	return n, err
}

// tabFirst keeps what follows a Tab in p[:n] for later, when Tab
// completes: the keys typed after it go to the line once it is completed.
func (c ctrlCReader) tabFirst(p []byte, n int) int {
	if c.t.editor.AutoCompleteCallback == nil {
		return n
	}
	if k := bytes.IndexByte(p[:n], '\t'); k >= 0 && k < n-1 {
		c.t.later = append(bytes.Clone(p[k+1:n]), c.t.later...)
		return k + 1
	}
	return n
}

// Tab completion's protocol with the guest's REPL (internal/pyhost's
// runner): OSC sequences, which a terminal would not show anyway.
const (
	complMark   = "\x1b]5379;wasmpy-complete;"    // the line asks for the completions of what follows
	complAnswer = "\x1b]5379;wasmpy-completions;" // the answer: a JSON list of strings, then BEL
)

var errComplete = errors.New("wasmpy: Tab: completions asked")

// completion is a Tab typed at pos (a byte offset) in line.
type completion struct {
	line string
	pos  int
}

// tab is the editor's AutoCompleteCallback in the REPL: Tab asks the guest.
func (t *Terminal) tab(line string, pos int, key rune) (string, int, bool) {
	if key != '\t' {
		return "", 0, false
	}
	t.compl = &completion{line: line, pos: pos}
	return line, pos, true // unchanged until the guest answers
}

// token is the dotted name the cursor ends, which rlcompleter completes.
var token = regexp.MustCompile(`[\p{L}\p{N}_.]*$`)

// complete goes on with the line c was typed in: what every candidate
// shares beyond the name is typed in, else several are listed (the editor
// draws the line again below them), else the terminal beeps.
func (t *Terminal) complete(c *completion, candidates []string) {
	name := token.FindString(c.line[:c.pos])
	common := ""
	if len(candidates) > 0 {
		common = candidates[0]
		for _, s := range candidates[1:] {
			for !strings.HasPrefix(s, common) {
				common = common[:len(common)-1]
			}
		}
	}
	switch {
	case len(common) > len(name) && strings.HasPrefix(common, name) && utf8.ValidString(common[len(name):]):
		t.inject = []byte(Clean(common[len(name):]))
	case len(candidates) > 1:
		list := make([]string, len(candidates))
		for i, s := range candidates {
			list[i] = Clean(s)
		}
		t.editor.Write([]byte(strings.Join(list, "  ") + "\n"))
	default:
		io.WriteString(t.out, "\a")
	}
}

// takeAnswer removes the guest's answer from b, the script's stdout, and
// keeps its candidates; t.mu is held. An answer cut by the end of b waits
// for the rest in t.pend.
func (t *Terminal) takeAnswer(b []byte) []byte {
	data := append(t.pend, b...)
	t.pend = nil
	i := bytes.Index(data, []byte(complAnswer))
	if i < 0 {
		// The answer's start may be cut: keep what could begin it.
		for k := min(len(complAnswer)-1, len(data)); k > 0; k-- {
			if bytes.HasSuffix(data, []byte(complAnswer[:k])) {
				t.pend = bytes.Clone(data[len(data)-k:])
				return data[:len(data)-k]
			}
		}
		return data
	}
	j := bytes.IndexByte(data[i:], '\a')
	if j < 0 {
		if len(data)-i > 1<<20 { // not an answer: let it through
			return data
		}
		t.pend = bytes.Clone(data[i:])
		return data[:i]
	}
	var names []string
	if json.Unmarshal(data[i+len(complAnswer):i+j], &names) == nil {
		t.candidates = names
	}
	t.awaiting = false
	return append(data[:i:i], data[i+j+1:]...)
}
