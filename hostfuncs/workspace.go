package hostfuncs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"
)

// Workspace limits that apply when the matching WorkspaceConfig field is zero,
// and the fixed bounds on what one call may ask for.
const (
	DefaultMaxFileBytes    = 10 << 20 // per file, for reads and writes
	DefaultMaxOverlayBytes = 64 << 20 // all overlay files together
	DefaultMaxFiles        = 1000     // files in the overlay

	MaxPathBytes       = 1024  // a path or glob, in bytes
	MaxNameBytes       = 255   // one path element, in bytes
	MaxListResults     = 10000 // paths list_files may return before failing
	MaxSearchResults   = 1000  // matches search_files returns, at most
	MaxSearchLineBytes = 1000  // a matching line is cut to this many bytes
	maxGlobSegments    = 64
	maxRegexpBytes     = 4096
)

// WorkspaceConfig describes one run's workspace. The zero value is an empty,
// overlay-only workspace with the default limits.
type WorkspaceConfig struct {
	// Stable is an optional host directory the guest may read but never
	// modify. Symlinks inside it are followed only while they stay inside it.
	Stable string
	// MaxFileBytes caps one file, read or written (0 = DefaultMaxFileBytes).
	MaxFileBytes int64
	// MaxOverlayBytes caps the total size of the overlay (0 = DefaultMaxOverlayBytes).
	MaxOverlayBytes int64
	// MaxFiles caps the number of files in the overlay (0 = DefaultMaxFiles).
	MaxFiles int
}

// Workspace is the guest's file system for one run: a read-only stable layer
// (a host directory, optional) under an in-memory overlay that receives every
// write. Reads see the overlay first. Nothing is ever written to disk; the
// caller reads the overlay back with Changes and OverlayFile.
//
// Paths are relative to the workspace root and /-separated ("src/main.py").
// Absolute paths, ".." that leaves the root, backslashes, NUL and other
// control characters, empty and over-long paths are refused with
// PermissionError.
//
// The overlay is keyed by the cleaned path; it does not resolve symlinks of
// the stable layer, so writing "link/x" does not make "target/x" readable.
//
// A Workspace is safe for concurrent use.
type Workspace struct {
	stable     string // absolute; "" for none
	maxFile    int64
	maxOverlay int64
	maxFiles   int

	mu    sync.Mutex
	files map[string][]byte   // overlay: cleaned path → contents
	dirs  map[string]struct{} // every ancestor directory of a key of files
	size  int64               // total bytes in files
}

// FileChange describes one file written to the overlay.
type FileChange struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"` // hex
}

// Match is one line found by Search.
type Match struct {
	Path string `json:"path"`
	Line int    `json:"line"` // 1-based
	Text string `json:"text"` // without the line ending, at most MaxSearchLineBytes
}

// NewWorkspace validates cfg and returns an empty overlay over cfg.Stable.
func NewWorkspace(cfg WorkspaceConfig) (*Workspace, error) {
	w := &Workspace{
		maxFile:    cfg.MaxFileBytes,
		maxOverlay: cfg.MaxOverlayBytes,
		maxFiles:   cfg.MaxFiles,
		files:      map[string][]byte{},
		dirs:       map[string]struct{}{},
	}
	if w.maxFile < 0 || w.maxOverlay < 0 || w.maxFiles < 0 {
		return nil, errors.New("wasmpy: workspace limits must not be negative")
	}
	if w.maxFile == 0 {
		w.maxFile = DefaultMaxFileBytes
	}
	if w.maxOverlay == 0 {
		w.maxOverlay = DefaultMaxOverlayBytes
	}
	if w.maxFiles == 0 {
		w.maxFiles = DefaultMaxFiles
	}
	if cfg.Stable != "" {
		abs, err := filepath.Abs(cfg.Stable)
		if err != nil {
			return nil, fmt.Errorf("wasmpy: workspace stable dir %q: %w", cfg.Stable, err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("wasmpy: workspace stable dir: %w", err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("wasmpy: workspace stable dir %q is not a directory", cfg.Stable)
		}
		r, err := os.OpenRoot(abs)
		if err != nil {
			return nil, fmt.Errorf("wasmpy: workspace stable dir: %w", err)
		}
		r.Close()
		w.stable = abs
	}
	return w, nil
}

// ReadFile returns the contents of the file at p: the overlay's if it was
// written, else the stable directory's.
func (w *Workspace) ReadFile(ctx context.Context, p string) ([]byte, error) {
	c, err := cleanPath(p)
	if err != nil {
		return nil, err
	}
	if c == "." {
		return nil, Errorf(IsADirectoryError, "%q is the workspace root, not a file", p)
	}
	w.mu.Lock()
	data, ok := w.files[c]
	_, isDir := w.dirs[c]
	parentIsFile := w.overlayParentIsFile(c)
	w.mu.Unlock()
	switch {
	case ok:
		return clone(data), nil
	case isDir:
		return nil, Errorf(IsADirectoryError, "%q is a directory", p)
	case parentIsFile:
		return nil, Errorf(NotADirectoryError, "a parent of %q is a file", p)
	}
	return w.readStable(ctx, p, c)
}

// WriteFile stores data at p in the overlay, replacing any earlier write and
// shadowing the stable file of the same name. It fails with OSError when the
// file exceeds MaxFileBytes, or the overlay would exceed MaxOverlayBytes or
// MaxFiles.
func (w *Workspace) WriteFile(ctx context.Context, p string, data []byte) error {
	c, err := cleanPath(p)
	if err != nil {
		return err
	}
	if c == "." {
		return Errorf(IsADirectoryError, "%q is the workspace root, not a file", p)
	}
	if int64(len(data)) > w.maxFile {
		return Errorf(OSError, "file too large: writing %d bytes to %q, the limit is %d bytes per file", len(data), p, w.maxFile)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.dirs[c]; ok {
		return Errorf(IsADirectoryError, "%q is a directory", p)
	}
	if w.overlayParentIsFile(c) {
		return Errorf(NotADirectoryError, "a parent of %q is a file", p)
	}
	if err := w.checkStableWritable(p, c); err != nil {
		return err
	}
	old, exists := w.files[c]
	total := w.size - int64(len(old)) + int64(len(data))
	if total > w.maxOverlay {
		return Errorf(OSError, "workspace quota exceeded: writing %d bytes to %q would bring the overlay to %d bytes, the limit is %d", len(data), p, total, w.maxOverlay)
	}
	if !exists && len(w.files) >= w.maxFiles {
		return Errorf(OSError, "workspace file limit reached: cannot create %q, the overlay already holds %d files", p, len(w.files))
	}
	w.files[c] = clone(data)
	w.size = total
	for i := range len(c) {
		if c[i] == '/' {
			w.dirs[c[:i]] = struct{}{}
		}
	}
	return nil
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
	found := map[string]struct{}{}
	w.mu.Lock()
	for p := range w.files {
		if g.match(p) {
			found[p] = struct{}{}
		}
	}
	w.mu.Unlock()
	if err := w.walkStable(ctx, g, found); err != nil {
		return nil, err
	}
	if len(found) > MaxListResults {
		return nil, Errorf(OSError, "more than %d files match %q: use a narrower pattern", MaxListResults, pattern)
	}
	out := make([]string, 0, len(found))
	for p := range found {
		out = append(out, p)
	}
	sort.Strings(out)
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
		return nil, Errorf(ValueError, "regular expression too long: %d bytes, the limit is %d", len(pattern), maxRegexpBytes)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, Errorf(ValueError, "bad regular expression: %v", err)
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
			out = append(out, Match{Path: f, Line: n, Text: truncateUTF8(line, MaxSearchLineBytes)})
			if len(out) == MaxSearchResults {
				return out, nil
			}
		}
	}
	return out, nil
}

// searchStep is the matching work (bytes times instructions of the
// compiled expression) Search does between two looks at ctx: a few
// milliseconds.
const searchStep = 1 << 20

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

// Changes lists every file written to the overlay, sorted by path.
func (w *Workspace) Changes() []FileChange {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]FileChange, 0, len(w.files))
	for p, data := range w.files {
		sum := sha256.Sum256(data)
		out = append(out, FileChange{Path: p, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// OverlayFile returns a copy of the overlay's contents for path (as listed by
// Changes), and whether the overlay holds it. The stable layer is not read.
func (w *Workspace) OverlayFile(p string) ([]byte, bool) {
	c, err := cleanPath(p)
	if err != nil {
		return nil, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	data, ok := w.files[c]
	if !ok {
		return nil, false
	}
	return clone(data), true
}

// Register adds the workspace capabilities to t. Arguments are JSON objects;
// bytes cross as standard base64 strings.
//
//	read_file    {"path": str, "binary": bool = false}
//	             → str (binary false: the file must be valid UTF-8, else
//	               UnicodeDecodeError) or base64 str (binary true)
//	write_file   {"path": str, "text": str} or {"path": str, "data_b64": base64 str}
//	             (exactly one of text, data_b64) → int, the bytes written
//	list_files   {"pattern": str = "*"} → [str], sorted
//	search_files {"pattern": str (regexp, required), "glob": str = "**"}
//	             → [{"path": str, "line": int, "text": str}]
//
// Errors: PermissionError (refused path, or a stable symlink leading
// outside), FileNotFoundError, IsADirectoryError, NotADirectoryError,
// OSError (file too large, overlay quota or file count exceeded, too many
// list results), UnicodeDecodeError, ValueError (bad arguments, glob or
// regexp), TypeError (write_file without exactly one of text, data_b64).
func (w *Workspace) Register(t Table) {
	t.Add("read_file", Typed(func(ctx context.Context, a struct {
		Path   string `json:"path"`
		Binary bool   `json:"binary"`
	}) (any, error) {
		data, err := w.ReadFile(ctx, a.Path)
		if err != nil {
			return nil, err
		}
		if a.Binary {
			return data, nil
		}
		if !utf8.Valid(data) {
			return nil, Errorf(UnicodeError, "%q is not valid UTF-8 (first bad byte at offset %d): read it with binary=True", a.Path, invalidUTF8At(data))
		}
		return string(data), nil
	}))
	t.Add("write_file", Typed(func(ctx context.Context, a struct {
		Path    string  `json:"path"`
		Text    *string `json:"text"`
		DataB64 *[]byte `json:"data_b64"`
	}) (int, error) {
		var data []byte
		switch {
		case a.Text != nil && a.DataB64 == nil:
			data = []byte(*a.Text)
		case a.Text == nil && a.DataB64 != nil:
			data = *a.DataB64
		default:
			return 0, Errorf(TypeError, "write_file needs exactly one of text or data_b64")
		}
		if err := w.WriteFile(ctx, a.Path, data); err != nil {
			return 0, err
		}
		return len(data), nil
	}))
	t.Add("list_files", Typed(func(ctx context.Context, a struct {
		Pattern *string `json:"pattern"`
	}) ([]string, error) {
		pattern := "*"
		if a.Pattern != nil {
			pattern = *a.Pattern
		}
		return w.ListFiles(ctx, pattern)
	}))
	t.Add("search_files", Typed(func(ctx context.Context, a struct {
		Pattern *string `json:"pattern"`
		Glob    *string `json:"glob"`
	}) ([]Match, error) {
		if a.Pattern == nil {
			return nil, Errorf(TypeError, "search_files needs a pattern")
		}
		glob := "**"
		if a.Glob != nil {
			glob = *a.Glob
		}
		return w.Search(ctx, *a.Pattern, glob)
	}))
}

// cleanPath checks a guest path and returns its clean form: "." for the
// root, else a relative, /-separated path without "." or ".." elements.
func cleanPath(p string) (string, error) {
	switch {
	case p == "":
		return "", Errorf(PermissionError, "empty path")
	case len(p) > MaxPathBytes:
		return "", Errorf(PermissionError, "path too long: %d bytes, the limit is %d", len(p), MaxPathBytes)
	case !utf8.ValidString(p):
		return "", Errorf(PermissionError, "path %q is not valid UTF-8", p)
	case strings.IndexByte(p, 0) >= 0:
		return "", Errorf(PermissionError, "path %q contains a NUL byte", p)
	case strings.IndexByte(p, '\\') >= 0:
		return "", Errorf(PermissionError, "path %q contains a backslash: separate directories with /", p)
	case p[0] == '/':
		return "", Errorf(PermissionError, "absolute path %q: paths are relative to the workspace root", p)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return "", Errorf(PermissionError, "path %q contains a control character", p)
		}
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", Errorf(PermissionError, "path %q leads outside the workspace", p)
	}
	for elem := range strings.SplitSeq(c, "/") {
		if len(elem) > MaxNameBytes {
			return "", Errorf(PermissionError, "path %q has an element longer than %d bytes", p, MaxNameBytes)
		}
	}
	return c, nil
}

// overlayParentIsFile reports whether a proper ancestor of c is an overlay
// file. w.mu must be held.
func (w *Workspace) overlayParentIsFile(c string) bool {
	for i := range len(c) {
		if c[i] == '/' {
			if _, ok := w.files[c[:i]]; ok {
				return true
			}
		}
	}
	return false
}

// openStable opens the stable directory, or returns nil if there is none.
func (w *Workspace) openStable() (*os.Root, error) {
	if w.stable == "" {
		return nil, nil
	}
	r, err := os.OpenRoot(w.stable)
	if err != nil {
		return nil, Errorf(HostError, "workspace stable directory unavailable")
	}
	return r, nil
}

func (w *Workspace) readStable(ctx context.Context, p, c string) ([]byte, error) {
	root, err := w.openStable()
	if err != nil {
		return nil, err
	}
	if root == nil {
		return nil, Errorf(FileNotFoundError, "no such file: %q", p)
	}
	defer root.Close()
	fi, err := root.Stat(c)
	if err != nil {
		return nil, stableError(p, err)
	}
	if fi.IsDir() {
		return nil, Errorf(IsADirectoryError, "%q is a directory", p)
	}
	if !fi.Mode().IsRegular() {
		return nil, Errorf(PermissionError, "%q is not a regular file", p)
	}
	if n := links(fi); n > 1 {
		return nil, Errorf(PermissionError, "%q has %d hard links: a file linked from elsewhere may lie outside the workspace, so it is not read", p, n)
	}
	if fi.Size() > w.maxFile {
		return nil, Errorf(OSError, "file too large: %q is %d bytes, the limit is %d bytes per file", p, fi.Size(), w.maxFile)
	}
	f, err := root.Open(c)
	if err != nil {
		return nil, stableError(p, err)
	}
	defer f.Close()
	if fi2, err := f.Stat(); err != nil || !os.SameFile(fi, fi2) {
		return nil, Errorf(PermissionError, "%q changed while being opened", p)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, w.maxFile+1))
	if err != nil {
		return nil, Errorf(OSError, "reading %q failed", p)
	}
	if int64(len(data)) > w.maxFile {
		return nil, Errorf(OSError, "file too large: %q is over %d bytes, the limit per file", p, w.maxFile)
	}
	return data, nil
}

// checkStableWritable refuses to write c into the overlay when the stable
// layer makes that impossible in a real file system. w.mu is held.
func (w *Workspace) checkStableWritable(p, c string) error {
	root, err := w.openStable()
	if err != nil || root == nil {
		return err
	}
	defer root.Close()
	fi, err := root.Stat(c)
	switch {
	case err == nil && fi.IsDir():
		return Errorf(IsADirectoryError, "%q is a directory", p)
	case err == nil, errors.Is(err, fs.ErrNotExist):
		return nil
	default:
		return stableError(p, err)
	}
}

// stableError maps an error from the stable directory to what the guest
// sees, without host paths.
func stableError(p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Errorf(FileNotFoundError, "no such file: %q", p)
	case errors.Is(err, syscall.ENOTDIR):
		return Errorf(NotADirectoryError, "a parent of %q is a file", p)
	default:
		// os.Root refuses symlinks that leave the directory (and absolute
		// ones); permission and loop errors land here too.
		return Errorf(PermissionError, "cannot access %q: permission denied or a symlink leading outside the workspace", p)
	}
}

// walkStable adds to found the stable files that g matches.
func (w *Workspace) walkStable(ctx context.Context, g *globPattern, found map[string]struct{}) error {
	root, err := w.openStable()
	if err != nil || root == nil {
		return err
	}
	defer root.Close()
	fsys := root.FS()
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if err != nil {
			if p == "." {
				return Errorf(HostError, "workspace stable directory unreadable")
			}
			return nil // skip what cannot be read
		}
		if d.IsDir() {
			if p != "." && !g.canDescend(p) {
				return fs.SkipDir
			}
			return nil
		}
		switch t := d.Type(); {
		case t&fs.ModeSymlink != 0:
			fi, err := fs.Stat(fsys, p) // follows, but only inside the root
			if err != nil || !fi.Mode().IsRegular() || links(fi) > 1 {
				return nil
			}
		case !t.IsRegular():
			return nil
		default:
			if fi, err := d.Info(); err != nil || links(fi) > 1 {
				return nil
			}
		}
		if g.match(p) {
			found[p] = struct{}{}
			if len(found) > MaxListResults {
				return fs.SkipAll
			}
		}
		return nil
	})
	return err
}

// globPattern is a compiled list_files pattern: path.Match elements, and "**"
// for any number of elements.
type globPattern struct{ elems []string }

func compileGlob(pattern string) (*globPattern, error) {
	if len(pattern) > MaxPathBytes {
		return nil, Errorf(ValueError, "pattern too long: %d bytes, the limit is %d", len(pattern), MaxPathBytes)
	}
	if strings.HasPrefix(pattern, "/") {
		return nil, Errorf(ValueError, "absolute pattern %q: patterns are relative to the workspace root", pattern)
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
				return nil, Errorf(ValueError, "bad pattern %q: %v", pattern, err)
			}
		}
		g.elems = append(g.elems, elem)
	}
	if len(g.elems) > maxGlobSegments {
		return nil, Errorf(ValueError, "pattern %q has more than %d elements", pattern, maxGlobSegments)
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

// clone copies b; the copy is never nil, so an empty file encodes as "" and
// not null.
func clone(b []byte) []byte { return append(make([]byte, 0, len(b)), b...) }

// truncateUTF8 returns b as a string of at most n bytes, cut at a rune
// boundary.
func truncateUTF8(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n])
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
