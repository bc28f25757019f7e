package mcpserver

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/wasmpy/wasmpy/workspace"
)

// files is one MCP session's workspace: a directory of its own that every
// run of the session reads as its workspace (the run's writes go to an
// overlay, saved back here after the run), and that write_file, read_file
// and list_files reach. It is bounded like a run's overlay.
type files struct {
	dir               string
	maxFile, maxTotal int64
	maxFiles          int
	mu                sync.Mutex // one writer at a time, so the bounds hold
	root              *os.Root
	// size is what the files hold, as counted against budget (owner's);
	// nil budget: none.
	size   int64
	budget *workspaceBudget
	owner  string
}

// FileInfo describes one workspace file.
type FileInfo struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
}

func newFiles(parent string, cfg workspace.Config) (*files, error) {
	dir, err := os.MkdirTemp(parent, "session-")
	if err != nil {
		return nil, fmt.Errorf("mcpserver: making a workspace: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: making a workspace: %w", err)
	}
	f := &files{dir: dir, root: root, maxFile: cfg.MaxFileBytes, maxTotal: cfg.MaxOverlayBytes, maxFiles: cfg.MaxFiles}
	if f.maxFile == 0 {
		f.maxFile = workspace.DefaultMaxFileBytes
	}
	if f.maxTotal == 0 {
		f.maxTotal = workspace.DefaultMaxOverlayBytes
	}
	if f.maxFiles == 0 {
		f.maxFiles = workspace.DefaultMaxFiles
	}
	return f, nil
}

func (f *files) close() {
	f.root.Close()
	os.RemoveAll(f.dir)
	f.mu.Lock()
	f.account(0)
	f.mu.Unlock()
}

// account counts the files as holding total bytes now, against the
// budget: growth past it is refused; f.mu is held.
func (f *files) account(total int64) error {
	if f.budget == nil {
		return nil
	}
	if err := f.budget.grow(f.owner, total-f.size); err != nil {
		return err
	}
	f.size = total
	return nil
}

// cleanPath checks a workspace path from a client: relative, /-separated,
// inside the workspace.
func cleanPath(p string) (string, error) {
	switch {
	case p == "":
		return "", errors.New("path is empty")
	case len(p) > workspace.MaxPathBytes:
		return "", fmt.Errorf("path is longer than %d bytes", workspace.MaxPathBytes)
	case strings.ContainsRune(p, 0) || strings.ContainsRune(p, '\\'):
		return "", fmt.Errorf("path %q: use / to separate its parts, and no NUL", p)
	}
	c := path.Clean(strings.TrimPrefix(p, "/workspace/"))
	if !filepath.IsLocal(c) || c == "." {
		return "", fmt.Errorf("path %q is not a file inside the workspace (want a relative path such as data/input.csv)", p)
	}
	for _, part := range strings.Split(c, "/") {
		if len(part) > workspace.MaxNameBytes {
			return "", fmt.Errorf("path %q: a part is longer than %d bytes", p, workspace.MaxNameBytes)
		}
	}
	return c, nil
}

// write stores data at p, making its directories, within the bounds.
func (f *files) write(p string, data []byte) (FileInfo, error) {
	c, err := cleanPath(p)
	if err != nil {
		return FileInfo{}, err
	}
	if int64(len(data)) > f.maxFile {
		return FileInfo{}, fmt.Errorf("%s: %d bytes, more than the %d a file may hold", c, len(data), f.maxFile)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	list, err := f.listLocked("")
	if err != nil {
		return FileInfo{}, err
	}
	total, exists := int64(len(data)), false
	for _, fi := range list {
		if fi.Path == c {
			exists = true
			continue
		}
		total += fi.Size
	}
	if total > f.maxTotal {
		return FileInfo{}, fmt.Errorf("%s: the workspace would hold %d bytes, more than its %d", c, total, f.maxTotal)
	}
	if !exists && len(list) >= f.maxFiles {
		return FileInfo{}, fmt.Errorf("%s: the workspace already holds %d files, its limit", c, len(list))
	}
	if total > f.size { // the budget counts the most the files may come to; a shrink is counted once written
		if err := f.account(total); err != nil {
			return FileInfo{}, err
		}
	}
	defer f.recount()
	if dir := path.Dir(c); dir != "." {
		if err := f.root.MkdirAll(dir, 0o755); err != nil {
			return FileInfo{}, fmt.Errorf("%s: %w", c, unwrapPath(err))
		}
	}
	if err := f.root.WriteFile(c, data, 0o644); err != nil {
		return FileInfo{}, fmt.Errorf("%s: %w", c, unwrapPath(err))
	}
	sum := sha256.Sum256(data)
	return FileInfo{Path: c, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}, nil
}

// remove removes p and all it holds; a path that is not there is no error.
func (f *files) remove(p string) error {
	c, err := cleanPath(p)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.recount()
	if err := f.root.RemoveAll(c); err != nil {
		return fmt.Errorf("%s: %w", c, unwrapPath(err))
	}
	return nil
}

// recount counts what the files hold now against the budget (after a
// write or a removal, which may have freed some); f.mu is held.
func (f *files) recount() {
	if f.budget == nil {
		return
	}
	var total int64
	if list, err := f.listLocked(""); err == nil {
		for _, fi := range list {
			total += fi.Size
		}
		f.account(total) // never growth past what write reserved
	}
}

// read returns the contents of p.
func (f *files) read(p string) (string, []byte, error) {
	c, err := cleanPath(p)
	if err != nil {
		return "", nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fi, err := f.root.Stat(c)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return c, nil, fmt.Errorf("%s: no such file in the workspace (list_files lists them)", c)
	case err != nil:
		return c, nil, fmt.Errorf("%s: %w", c, unwrapPath(err))
	case fi.IsDir():
		return c, nil, fmt.Errorf("%s is a directory (list_files lists what it holds)", c)
	case fi.Size() > f.maxFile:
		return c, nil, fmt.Errorf("%s: %d bytes, more than the %d a read may return", c, fi.Size(), f.maxFile)
	}
	data, err := f.root.ReadFile(c)
	if err != nil {
		return c, nil, fmt.Errorf("%s: %w", c, unwrapPath(err))
	}
	return c, data, nil
}

// list returns the files under prefix ("" for all), sorted.
func (f *files) list(prefix string) ([]FileInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.listLocked(prefix)
}

func (f *files) listLocked(prefix string) ([]FileInfo, error) {
	start := "."
	if prefix != "" {
		c, err := cleanPath(prefix)
		if err != nil {
			return nil, err
		}
		start = c
	}
	out := []FileInfo{}
	err := fs.WalkDir(f.root.FS(), start, func(p string, d fs.DirEntry, err error) error {
		switch {
		case errors.Is(err, fs.ErrNotExist) && p == start:
			return fs.SkipAll
		case err != nil:
			return err
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			out = append(out, FileInfo{Path: p, Size: info.Size()})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing the workspace: %w", unwrapPath(err))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// unwrapPath drops the host path from an *fs.PathError: the client's own
// path is already in the message.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
