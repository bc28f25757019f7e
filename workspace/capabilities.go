package workspace

import (
	"context"
	"errors"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/tetratelabs/wazero/experimental/sys"

	"github.com/wasmpy/wasmpy/hostfuncs"
)

// ReadFile returns the contents of the workspace file at p: the overlay's
// if the run wrote it, else the stable directory's.
func (w *Workspace) ReadFile(ctx context.Context, p string) ([]byte, error) {
	c, err := cleanPath(p)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	e, err := w.ws.resolve(c)
	switch {
	case err != nil:
		return nil, guestError(p, err)
	case e.isDir():
		return nil, guestError(p, sys.EISDIR)
	case e.node != nil:
		return clone(e.node.data), nil
	}
	data, err := w.ws.readStable(c, w.maxFile)
	if err != nil {
		return nil, guestError(p, err)
	}
	return data, nil
}

// WriteFile stores data at p in the overlay, making the directories on its
// way, replacing any earlier contents and shadowing the stable file of the
// same name. It fails with OSError when the file exceeds MaxFileBytes, or
// the overlay would exceed MaxOverlayBytes or MaxFiles.
func (w *Workspace) WriteFile(ctx context.Context, p string, data []byte) error {
	c, err := cleanPath(p)
	if err != nil {
		return err
	}
	if c == "." {
		return hostfuncs.Errorf(hostfuncs.IsADirectoryError, "%q is the workspace root, not a file", p)
	}
	if int64(len(data)) > w.maxFile {
		return hostfuncs.Errorf(hostfuncs.OSError, "file too large: writing %d bytes to %q, the limit is %d bytes per file", len(data), p, w.maxFile)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	t := &w.ws
	e, err := t.resolve(c)
	switch {
	case err == nil && e.isDir():
		return guestError(p, sys.EISDIR)
	case err == nil:
	case errors.Is(err, sys.ENOENT):
		// Check the quota before making directories, so a refused write
		// leaves nothing behind.
		if total := w.size + int64(len(data)); total > w.maxOverlay {
			return quotaError(p, len(data), total, w.maxOverlay)
		}
		if w.files >= w.maxFiles {
			return hostfuncs.Errorf(hostfuncs.OSError, "workspace file limit reached: cannot create %q, the overlay already holds %d files", p, w.files)
		}
		if err := t.mkdirs(parent(c)); err != nil {
			return guestError(p, err)
		}
		e = entry{}
	default:
		return guestError(p, err)
	}
	n := e.node
	if n == nil {
		n = &node{mode: 0o644}
		if e.fi != nil {
			n.mode = e.fi.Mode().Perm()
		}
		if err := t.addNode(c, n); err != nil {
			return guestError(p, err)
		}
	}
	old := int64(len(n.data))
	if total := w.size - old + int64(len(data)); total > w.maxOverlay {
		if e.node == nil {
			t.unlinkNode(c)
		}
		return quotaError(p, len(data), total, w.maxOverlay)
	}
	if err := w.resize(n, int64(len(data))); err != nil {
		return guestError(p, err)
	}
	copy(n.data, data)
	n.mtime = w.now()
	return nil
}

func quotaError(p string, n int, total, limit int64) error {
	return hostfuncs.Errorf(hostfuncs.OSError, "workspace quota exceeded: writing %d bytes to %q would bring the overlay to %d bytes, the limit is %d", n, p, total, limit)
}

// guestError maps an error of the file system about guest path p to the
// exception the capability raises, without host paths.
func guestError(p string, err error) error {
	var lim limitError
	var errno sys.Errno
	switch {
	case errors.As(err, &lim):
		return hostfuncs.Errorf(hostfuncs.OSError, "%s (%q)", string(lim), p)
	case !errors.As(err, &errno):
		return err
	}
	switch errno {
	case sys.ENOENT:
		return hostfuncs.Errorf(hostfuncs.FileNotFoundError, "no such file: %q", p)
	case sys.EISDIR:
		return hostfuncs.Errorf(hostfuncs.IsADirectoryError, "%q is a directory", p)
	case sys.ENOTDIR:
		return hostfuncs.Errorf(hostfuncs.NotADirectoryError, "a parent of %q is a file", p)
	case sys.EACCES, sys.EPERM:
		return hostfuncs.Errorf(hostfuncs.PermissionError, "cannot access %q: permission denied, a symlink leading outside the workspace, or a file with more than one hard link", p)
	default:
		return hostfuncs.Errorf(hostfuncs.OSError, "%q: %v", p, errno)
	}
}

// Register adds the workspace capabilities to t. Arguments are JSON objects;
// bytes cross as standard base64 strings in JSON, raw over the guest's
// transport (hostfuncs.Bytes, hostfuncs.Text, hostfuncs.Data).
//
//	read_file    {"path": str, "binary": bool = false}
//	             → str (binary false: the file must be valid UTF-8, else
//	               UnicodeDecodeError) or bytes (binary true)
//	write_file   {"path": str, "text": str}, {"path": str, "data_b64": base64 str}
//	             or {"path": str} with the content attached as data
//	             (exactly one of the three) → int, the bytes written
//	list_files   {"pattern": str = "*"} → [str], sorted
//	search_files {"pattern": str (regexp, required), "glob": str = "**"}
//	             → [{"path": str, "line": int, "text": str}]
//
// Errors: PermissionError (refused path, a stable symlink leading outside,
// a hard-linked stable file), FileNotFoundError, IsADirectoryError,
// NotADirectoryError, OSError (file too large, overlay quota or file count
// exceeded, too many list results), UnicodeDecodeError, ValueError (bad
// arguments, glob or regexp), TypeError (write_file without exactly one of
// text, data_b64, attached data).
func (w *Workspace) Register(t hostfuncs.Table) {
	t.Add("read_file", hostfuncs.Typed(func(ctx context.Context, a struct {
		Path   string `json:"path"`
		Binary bool   `json:"binary"`
	}) (any, error) {
		data, err := w.ReadFile(ctx, a.Path)
		if err != nil {
			return nil, err
		}
		if a.Binary {
			return hostfuncs.Bytes(data), nil
		}
		if !utf8.Valid(data) {
			return nil, hostfuncs.Errorf(hostfuncs.UnicodeError, "%q is not valid UTF-8 (first bad byte at offset %d): read it with binary=True", a.Path, invalidUTF8At(data))
		}
		return hostfuncs.Text(data), nil
	}))
	t.Add("write_file", hostfuncs.Typed(func(ctx context.Context, a struct {
		Path    string  `json:"path"`
		Text    *string `json:"text"`
		DataB64 *[]byte `json:"data_b64"`
	}) (int, error) {
		data, attached := hostfuncs.Data(ctx)
		switch {
		case a.Text != nil && a.DataB64 == nil && !attached:
			data = []byte(*a.Text)
		case a.Text == nil && a.DataB64 != nil && !attached:
			data = *a.DataB64
		case a.Text == nil && a.DataB64 == nil && attached:
		default:
			return 0, hostfuncs.Errorf(hostfuncs.TypeError, "write_file needs exactly one of text, data_b64 or attached data")
		}
		if err := w.WriteFile(ctx, a.Path, data); err != nil {
			return 0, err
		}
		return len(data), nil
	}))
	t.Add("list_files", hostfuncs.Typed(func(ctx context.Context, a struct {
		Pattern *string `json:"pattern"`
	}) ([]string, error) {
		pattern := "*"
		if a.Pattern != nil {
			pattern = *a.Pattern
		}
		return w.ListFiles(ctx, pattern)
	}))
	t.Add("search_files", hostfuncs.Typed(func(ctx context.Context, a struct {
		Pattern *string `json:"pattern"`
		Glob    *string `json:"glob"`
	}) ([]Match, error) {
		if a.Pattern == nil {
			return nil, hostfuncs.Errorf(hostfuncs.TypeError, "search_files needs a pattern")
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
		return "", hostfuncs.Errorf(hostfuncs.PermissionError, "empty path")
	case len(p) > MaxPathBytes:
		return "", hostfuncs.Errorf(hostfuncs.PermissionError, "path too long: %d bytes, the limit is %d", len(p), MaxPathBytes)
	case !utf8.ValidString(p):
		return "", hostfuncs.Errorf(hostfuncs.PermissionError, "path %q is not valid UTF-8", p)
	case strings.IndexByte(p, 0) >= 0:
		return "", hostfuncs.Errorf(hostfuncs.PermissionError, "path %q contains a NUL byte", p)
	case strings.IndexByte(p, '\\') >= 0:
		return "", hostfuncs.Errorf(hostfuncs.PermissionError, "path %q contains a backslash: separate directories with /", p)
	case p[0] == '/':
		return "", hostfuncs.Errorf(hostfuncs.PermissionError, "absolute path %q: paths are relative to the workspace root", p)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return "", hostfuncs.Errorf(hostfuncs.PermissionError, "path %q contains a control character", p)
		}
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", hostfuncs.Errorf(hostfuncs.PermissionError, "path %q leads outside the workspace", p)
	}
	for elem := range strings.SplitSeq(c, "/") {
		if len(elem) > MaxNameBytes {
			return "", hostfuncs.Errorf(hostfuncs.PermissionError, "path %q has an element longer than %d bytes", p, MaxNameBytes)
		}
	}
	return c, nil
}
