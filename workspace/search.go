package workspace

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path"
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/wasmpy/wasmpy/hostfuncs"
)

// Match is one line found by Search.
type Match struct {
	Path string `json:"path"`
	Line int    `json:"line"` // 1-based
	Text string `json:"text"` // without the line ending, at most MaxSearchLineBytes
}

// ListFiles returns the files of both layers whose paths match the glob
// pattern, sorted. In the pattern "*", "?" and "[...]" match within one path
// element (as path.Match) and an element "**" matches any number of them:
// "*" lists the top level, "**" everything, "**/*.py" every Python file.
// Directories are not listed; neither are symlinks in the stable layer that
// lead to directories or outside it.
func (w *Workspace) ListFiles(ctx context.Context, pattern string) ([]string, error) {
	g, err := compileGlob(pattern)
	if err != nil {
		return nil, err
	}
	var out []string
	w.mu.Lock()
	defer w.mu.Unlock()
	errTooMany := errors.New("too many")
	err = w.ws.walk(".", g.canDescend, func(p string, e entry) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !e.isDir() && g.match(p) {
			if out = append(out, p); len(out) > MaxListResults {
				return errTooMany
			}
		}
		return nil
	})
	switch {
	case err == errTooMany:
		return nil, hostfuncs.Errorf(hostfuncs.OSError, "more than %d files match %q: use a narrower pattern", MaxListResults, pattern)
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, guestError(".", err)
	}
	sort.Strings(out)
	if out == nil {
		out = []string{}
	}
	return out, nil
}

// Search returns the lines matching the regular expression pattern (RE2
// syntax, applied to each line) in the files ListFiles(glob) returns, in path
// then line order. It stops after MaxSearchResults matches and skips files it
// cannot read as text: binary (NUL bytes or invalid UTF-8), too large, or
// unreadable.
//
// Matching takes time linear in the line's length times the size of the
// compiled expression; Search looks at ctx every searchStep units of that
// work, and inside a line long enough to cost more, so it ends soon after
// ctx does whatever the pattern and the files.
func (w *Workspace) Search(ctx context.Context, pattern, glob string) ([]Match, error) {
	if len(pattern) > maxRegexpBytes {
		return nil, hostfuncs.Errorf(hostfuncs.ValueError, "regular expression too long: %d bytes, the limit is %d", len(pattern), maxRegexpBytes)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, hostfuncs.Errorf(hostfuncs.ValueError, "bad regular expression: %v", err)
	}
	insts := regexpSize(pattern)
	files, err := w.ListFiles(ctx, glob)
	if err != nil {
		return nil, err
	}
	out := []Match{}
	budget := &workBudget{ctx: ctx, insts: insts}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		data, err := w.ReadFile(ctx, f)
		if err != nil || bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
			continue
		}
		for n := 1; len(data) > 0; n++ {
			line := data
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				line, data = data[:i], data[i+1:]
			} else {
				data = nil
			}
			line = bytes.TrimSuffix(line, []byte("\r"))
			var found bool
			if (len(line)+1)*insts > searchStep {
				found = re.MatchReader(&ctxRunes{budget: budget, b: line})
			} else {
				found = re.Match(line)
				budget.spend(len(line) + 1)
			}
			if err := budget.err(); err != nil { // a match cut short is no match
				return nil, err
			}
			if !found {
				continue
			}
			out = append(out, Match{Path: f, Line: n, Text: hostfuncs.TruncateUTF8(line, MaxSearchLineBytes)})
			if len(out) == MaxSearchResults {
				return out, nil
			}
		}
	}
	return out, nil
}

// searchStep is the matching work (bytes times instructions of the
// compiled expression) Search does between two looks at ctx: about a
// millisecond.
const searchStep = 1 << 18

// regexpSize is the number of instructions of pattern's compiled program,
// which bounds the work of matching one byte.
func regexpSize(pattern string) int {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 1
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 1
	}
	return max(len(prog.Inst), 1)
}

// workBudget looks at ctx each time searchStep units of matching work
// have been done.
type workBudget struct {
	ctx   context.Context
	insts int // per byte matched
	work  int // since ctx was last looked at
	done  error
}

// spend counts matching n bytes and reports whether ctx is still live.
func (b *workBudget) spend(n int) bool {
	if b.work += n * b.insts; b.work > searchStep {
		b.work = 0
		b.done = b.ctx.Err()
	}
	return b.done == nil
}

func (b *workBudget) err() error { return b.done }

// ctxRunes feeds a line to the matcher rune by rune and ends it early, as
// if the line ended, once the budget finds ctx done.
type ctxRunes struct {
	budget *workBudget
	b      []byte
}

func (r *ctxRunes) ReadRune() (rune, int, error) {
	if len(r.b) == 0 || !r.budget.spend(1) {
		return 0, 0, io.EOF
	}
	c, size := utf8.DecodeRune(r.b)
	r.b = r.b[size:]
	return c, size, nil
}

// globPattern is a compiled list_files pattern: path.Match elements, and "**"
// for any number of elements.
type globPattern struct{ elems []string }

func compileGlob(pattern string) (*globPattern, error) {
	if len(pattern) > MaxPathBytes {
		return nil, hostfuncs.Errorf(hostfuncs.ValueError, "pattern too long: %d bytes, the limit is %d", len(pattern), MaxPathBytes)
	}
	if strings.HasPrefix(pattern, "/") {
		return nil, hostfuncs.Errorf(hostfuncs.ValueError, "absolute pattern %q: patterns are relative to the workspace root", pattern)
	}
	g := &globPattern{}
	for elem := range strings.SplitSeq(pattern, "/") {
		switch {
		case elem == "" || elem == ".":
			continue
		case elem == "**":
			if n := len(g.elems); n > 0 && g.elems[n-1] == "**" {
				continue
			}
		default:
			if _, err := path.Match(elem, ""); err != nil {
				return nil, hostfuncs.Errorf(hostfuncs.ValueError, "bad pattern %q: %v", pattern, err)
			}
		}
		g.elems = append(g.elems, elem)
	}
	if len(g.elems) > maxGlobSegments {
		return nil, hostfuncs.Errorf(hostfuncs.ValueError, "pattern %q has more than %d elements", pattern, maxGlobSegments)
	}
	return g, nil
}

// match reports whether the file path p matches the whole pattern.
func (g *globPattern) match(p string) bool { return g.run(p, false) }

// canDescend reports whether a file under the directory dir could match.
func (g *globPattern) canDescend(dir string) bool { return g.run(dir, true) }

// run matches by dynamic programming, in time linear in
// len(pattern elements) × len(path elements) whatever the "**"s.
// ok[i][j] says whether elems[i:] matches segs[j:] (or, for prefix, could
// match segs[j:] followed by more elements).
func (g *globPattern) run(p string, prefix bool) bool {
	segs := strings.Split(p, "/")
	P, S := len(g.elems), len(segs)
	ok := make([]bool, (P+1)*(S+1))
	at := func(i, j int) bool { return ok[i*(S+1)+j] }
	for i := P; i >= 0; i-- {
		for j := S; j >= 0; j-- {
			var v bool
			switch {
			case j == S && prefix:
				v = i < P
			case i == P:
				v = j == S
			case g.elems[i] == "**":
				v = at(i+1, j) || (j < S && at(i, j+1))
			case j == S:
				v = false
			default:
				m, _ := path.Match(g.elems[i], segs[j])
				v = m && at(i+1, j+1)
			}
			ok[i*(S+1)+j] = v
		}
	}
	return ok[0]
}

// invalidUTF8At returns the offset of the first byte of b that is not valid
// UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(b)
}
