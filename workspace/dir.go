package workspace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	wsys "github.com/tetratelabs/wazero/sys"
)

// Dir is a host directory served read-only, as an fs.FS, under the rules
// of the stable layer: opened with os.Root, so a symlink is followed only
// while it stays inside; a regular file with more than one hard link, a
// device, a socket or a pipe is refused (EACCES) and left out of listings.
// Names that start with "." (.git, .env, .venv) are not served at all:
// they hold a project's secrets and tools, never a module Python imports.
// Inode numbers are hashes of the host's, which the guest never sees.
// Files are read as the guest asks for them, not copied ahead.
type Dir struct {
	root *os.Root
}

// OpenDir opens the directory at path.
func OpenDir(path string) (*Dir, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("wasmpy: %s: %w", path, unwrapPath(err))
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("wasmpy: %s: not a directory", path)
	}
	r, err := os.OpenRoot(path)
	if err != nil {
		return nil, fmt.Errorf("wasmpy: %s: %w", path, unwrapPath(err))
	}
	return &Dir{root: r}, nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Close releases the directory; files open in it stay readable.
func (d *Dir) Close() error { return d.root.Close() }

// hiddenName reports whether a path element of name starts with ".".
func hiddenName(name string) bool {
	return name != "." && (strings.HasPrefix(name, ".") || strings.Contains(name, "/."))
}

func (d *Dir) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if hiddenName(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	f, err := openRead(d.root, name) // the type is checked on the open file
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: dirErrno(err)}
	}
	fi, err := f.Stat()
	if err == nil && !servable(fi) {
		err = syscall.EACCES
	}
	if err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return &dirFile{d: d, name: name, f: f, fi: fi}, nil
}

// servable is what the stable layer serves: plain files with one name, and
// directories.
func servable(fi fs.FileInfo) bool {
	return fi.IsDir() || (fi.Mode().IsRegular() && links(fi) <= 1)
}

// dirErrno is the error the guest sees for a failed lookup: a missing name
// or one through a file as on Linux, anything else (a symlink out, a
// loop, a permission) EACCES.
func dirErrno(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fs.ErrNotExist
	case errors.Is(err, syscall.ENOTDIR):
		return syscall.ENOTDIR
	case errors.Is(err, syscall.ENAMETOOLONG):
		return syscall.ENAMETOOLONG
	}
	return syscall.EACCES
}

// dirFile is an open file or directory of a Dir. It has no Readdir method
// (wazero would prefer it to ReadDir, and list what the Dir hides).
type dirFile struct {
	d    *Dir
	name string
	f    *os.File
	fi   fs.FileInfo
}

func (f *dirFile) Read(p []byte) (int, error)                { return f.f.Read(p) }
func (f *dirFile) ReadAt(p []byte, off int64) (int, error)   { return f.f.ReadAt(p, off) }
func (f *dirFile) Seek(off int64, whence int) (int64, error) { return f.f.Seek(off, whence) }
func (f *dirFile) Close() error                              { return f.f.Close() }
func (f *dirFile) Stat() (fs.FileInfo, error)                { return guestInfo{f.fi}, nil }

// ReadDir lists what the Dir serves.
func (f *dirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	var out []fs.DirEntry
	for {
		ents, err := f.f.ReadDir(n)
		for _, e := range ents {
			child := e.Name()
			if f.name != "." {
				child = f.name + "/" + child
			}
			if hiddenName(e.Name()) {
				continue
			}
			fi, serr := f.d.root.Stat(child) // follows a symlink that stays inside
			if serr != nil || !servable(fi) {
				continue
			}
			out = append(out, fs.FileInfoToDirEntry(guestInfo{fi}))
		}
		// A batch that was all hidden must not read as the end.
		if n <= 0 || len(out) > 0 || err != nil || len(ents) == 0 {
			return out, err
		}
	}
}

// guestInfo describes a host file without the host's inode numbers.
type guestInfo struct{ fs.FileInfo }

func (g guestInfo) Sys() any {
	st := wsys.Stat_t{Dev: 2, Mode: g.Mode(), Nlink: 1, Size: g.Size()}
	st.Mtim = g.ModTime().UnixNano()
	st.Atim, st.Ctim = st.Mtim, st.Mtim
	if g.IsDir() {
		st.Nlink = 2
	}
	h := fnv.New64a()
	if dev, ino, ok := fileID(g.FileInfo); ok {
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:8], dev)
		binary.LittleEndian.PutUint64(b[8:], ino)
		h.Write(b[:])
	} else {
		h.Write([]byte(filepath.ToSlash(g.Name())))
	}
	st.Ino = h.Sum64() | 1<<63
	return &st
}
