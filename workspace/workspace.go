// Package workspace is a run's file system: a read-only stable layer (a host
// directory, opened with os.Root) under a per-run in-memory overlay that
// receives every write, create, delete and rename. Nothing is ever written
// to disk; the caller reads the overlay back with Changes and OverlayFile.
//
// The guest reaches it two ways that see the same files: as a real
// directory, through the wazero file system SysFS returns (open, os,
// pathlib, shutil...), and through the JSON capabilities Register adds
// (read_file, write_file, list_files, search_files).
//
//	w, err := workspace.New(workspace.Config{Stable: "data"})
//	defer w.Close()
//	w.Register(table)            // the capabilities
//	fsys := w.SysFS(clock)       // mounted at / in the guest
//	for _, f := range w.Changes() { ... }
//
// Errors are errno-level (experimental/sys.Errno) inside; the capabilities
// map them to Python exceptions at the edge.
package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"
)

// Limits that apply when the matching Config field is zero, and the fixed
// bounds on what one call may ask for.
const (
	DefaultMaxFileBytes    = 10 << 20 // per file, for reads and writes
	DefaultMaxOverlayBytes = 64 << 20 // all overlay files together
	DefaultMaxFiles        = 1000     // files in the overlay (directories are bounded alike, apart)

	MaxPathBytes       = 1024  // a path or glob, in bytes
	MaxNameBytes       = 255   // one path element, in bytes
	MaxListResults     = 10000 // paths list_files may return before failing
	MaxSearchResults   = 1000  // matches search_files returns, at most
	MaxSearchLineBytes = 1000  // a matching line is cut to this many bytes
	MaxOpenFiles       = 1024  // files and directories the guest holds open at once
	maxGlobSegments    = 64
	maxRegexpBytes     = 4096
)

// Config describes one run's workspace. The zero value is an empty,
// overlay-only workspace with the default limits.
type Config struct {
	// Stable is an optional host directory the guest may read but never
	// modify. Symlinks inside it are followed only while they stay inside
	// it; regular files with more than one hard link are refused, since
	// their other names may lie outside.
	Stable string
	// MaxFileBytes caps one overlay file, and one read_file of a stable
	// file (0 = DefaultMaxFileBytes).
	MaxFileBytes int64
	// MaxOverlayBytes caps the total size of the overlay (0 = DefaultMaxOverlayBytes).
	MaxOverlayBytes int64
	// MaxFiles caps the number of files in the overlay, and apart the
	// number of directories made in it (0 = DefaultMaxFiles).
	MaxFiles int
}

// Workspace is one run's file system. Its guest paths are relative to the
// workspace root and /-separated ("src/main.py"); the guest's /tmp is a
// second, overlay-only tree sharing the workspace's limits and left out of
// Changes. A Workspace is safe for concurrent use.
type Workspace struct {
	maxFile    int64
	maxOverlay int64
	maxFiles   int

	mu      sync.Mutex
	ws, tmp tree
	size    int64 // bytes held by overlay files, linked or still open
	files   int   // linked overlay files, both trees
	dirs    int   // linked overlay directories, both trees
	ino     uint64
	open    map[*handle]struct{}
	now     func() int64 // ns since the epoch, for the times recorded
}

// FileChange describes one file of the overlay.
type FileChange struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"` // hex
}

// New validates cfg and returns an empty overlay over cfg.Stable.
func New(cfg Config) (*Workspace, error) {
	w := &Workspace{
		maxFile: cfg.MaxFileBytes, maxOverlay: cfg.MaxOverlayBytes, maxFiles: cfg.MaxFiles,
		open: map[*handle]struct{}{},
		now:  func() int64 { return time.Now().UnixNano() },
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
	w.ws = w.newTree("workspace", nil)
	w.tmp = w.newTree("tmp", nil)
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
		w.ws.root = r
	}
	return w, nil
}

// Close releases the stable directory and the stable files the guest left
// open. The overlay stays readable.
func (w *Workspace) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for h := range w.open {
		h.release()
	}
	if w.ws.root != nil {
		return w.ws.root.Close()
	}
	return nil
}

// Changes lists every file of the workspace overlay (not /tmp), sorted by
// path: what the run wrote, created or renamed, as it is at the end.
func (w *Workspace) Changes() []FileChange {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]FileChange, 0, len(w.ws.nodes))
	for p, n := range w.ws.nodes {
		if n.dir {
			continue
		}
		sum := sha256.Sum256(n.data)
		out = append(out, FileChange{Path: p, Size: int64(len(n.data)), SHA256: hex.EncodeToString(sum[:])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Removed lists the stable paths of the workspace tree that the run removed
// or renamed away, sorted; each hides everything under it. With Changes
// and OverlayFile it is what a caller needs to carry a run's work over to
// the stable directory.
func (w *Workspace) Removed() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.ws.gone))
}

// OverlayFile returns a copy of the overlay's contents for path (as listed
// by Changes), and whether the overlay holds it. The stable layer is not read.
func (w *Workspace) OverlayFile(p string) ([]byte, bool) {
	c, err := cleanPath(p)
	if err != nil {
		return nil, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	n, ok := w.ws.nodes[c]
	if !ok || n.dir {
		return nil, false
	}
	return clone(n.data), true
}

// newIno numbers an overlay node; stable files get theirs from a hash of
// their path (see stableIno), with the top bit set. w.mu is held.
func (w *Workspace) newIno() uint64 {
	w.ino++
	return w.ino
}

// limitError is a workspace limit hit: open() and os calls see EIO (the
// errno set of WASI in wazero has no ENOSPC or EFBIG), the capabilities an
// OSError with this message.
type limitError string

func (e limitError) Error() string { return string(e) }

func limitf(format string, args ...any) error { return limitError(fmt.Sprintf(format, args...)) }

// resize accounts for n growing or shrinking to size bytes, refusing what
// would pass the per-file cap or the overlay quota. w.mu is held.
func (w *Workspace) resize(n *node, size int64) error {
	if size > w.maxFile {
		return limitf("file too large: %d bytes, the limit is %d bytes per file", size, w.maxFile)
	}
	if total := w.size - int64(len(n.data)) + size; size > int64(len(n.data)) && total > w.maxOverlay {
		return limitf("workspace quota exceeded: the overlay would hold %d bytes, the limit is %d", total, w.maxOverlay)
	}
	w.size += size - int64(len(n.data))
	switch {
	case size <= int64(len(n.data)):
		n.data = n.data[:size]
	case size <= int64(cap(n.data)):
		old := len(n.data)
		n.data = n.data[:size]
		clear(n.data[old:])
	default:
		grown := make([]byte, size, min(max(size, 2*int64(cap(n.data))), w.maxFile))
		copy(grown, n.data)
		n.data = grown
	}
	return nil
}

// clone copies b; the copy is never nil, so an empty file encodes as "" and
// not null.
func clone(b []byte) []byte { return append(make([]byte, 0, len(b)), b...) }
