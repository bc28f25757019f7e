package engine

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"syscall"

	"github.com/tetratelabs/wazero"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

// stdlibFS serves the standard library zip's contents (sources, their
// __pycache__ bytecode, data files; see assets/build/mkstdlib.py) read-only
// at stdlibMount: the directory CPython computes from PYTHONHOME=/usr/local,
// as on a native install, so sys._stdlib_dir, __file__, tracebacks and
// inspect see real files. nil (no zip: the interpreter brings its own)
// mounts nothing.
func stdlibFS(zipData []byte) (wazero.FSConfig, error) {
	cfg := wazero.NewFSConfig()
	mount, err := stdlibSysFS(zipData)
	if mount == nil || err != nil {
		return cfg, err
	}
	return cfg.(sysfs.FSConfig).WithSysFSMount(mount, stdlibMount), nil
}

// stdlibSysFS is the standard library's file system, nil for none: what
// stdlibFS mounts, for any engine.
func stdlibSysFS(zipData []byte) (experimentalsys.FS, error) {
	if zipData == nil {
		return nil, nil
	}
	zr, err := zip.NewReader(bytes.NewReader(zipData), int64(len(zipData)))
	if err != nil {
		return nil, fmt.Errorf("wasmpy: the standard library zip: %w", err)
	}
	if _, err := fs.Stat(zr, "os.py"); err != nil {
		return nil, errors.New("wasmpy: the standard library zip has no os.py: " +
			"it comes from an older build.sh; run `make` to rebuild it")
	}
	files := seekableFS{zr}
	return &linuxPaths{FS: &readOnlyFS{sysfs.ReadFS{FS: &sysfs.AdaptFS{FS: files}}}, files: files}, nil
}

// readOnlyFS refuses every change with EROFS, as a read-only mount does.
// (wazero's ReadFS answers an open for writing with ENOSYS, which Python
// reports as "function not implemented".)
type readOnlyFS struct{ sysfs.ReadFS }

func (r *readOnlyFS) OpenFile(path string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	const writing = experimentalsys.O_WRONLY | experimentalsys.O_RDWR | experimentalsys.O_CREAT |
		experimentalsys.O_TRUNC | experimentalsys.O_APPEND
	if flag&writing != 0 {
		if flag&experimentalsys.O_DIRECTORY != 0 {
			return nil, experimentalsys.EISDIR
		}
		return nil, experimentalsys.EROFS
	}
	return r.ReadFS.OpenFile(path, flag, perm)
}

// seekableFS opens a file that cannot seek (a zip entry's) as a copy in
// memory, so it can: Python seeks in source files (tokenize, linecache,
// inspect) and in data files. A copy is at most maxCopy bytes.
type seekableFS struct{ fs fs.FS }

const maxCopy = 256 << 20

func (s seekableFS) Open(name string) (fs.File, error) {
	f, err := s.fs.Open(name)
	if err != nil {
		return nil, err
	}
	if _, ok := f.(io.Seeker); ok {
		return f, nil
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if fi.IsDir() {
		return f, nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCopy+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxCopy {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EFBIG}
	}
	return &memFile{Reader: bytes.NewReader(data), info: fi}, nil
}

// memFile is a regular file's contents, read from the zip.
type memFile struct {
	*bytes.Reader
	info fs.FileInfo
}

func (m *memFile) Stat() (fs.FileInfo, error) { return m.info, nil }
func (m *memFile) Close() error               { return nil }

// linuxPaths answers ENOTDIR for a path that goes through a regular file
// (os.py/x), as Linux does, where the zip says it does not exist (ENOENT)
// and a read-only mount refuses a change (EROFS). Code written for Linux
// tells them apart: test.support's unlink() ignores ENOENT and ENOTDIR only.
type linuxPaths struct {
	experimentalsys.FS
	files fs.FS
}

// throughFile reports whether a proper prefix of p names a regular file.
func (l *linuxPaths) throughFile(p string) bool {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
		if fi, err := fs.Stat(l.files, dir); err == nil {
			return !fi.IsDir()
		}
	}
	return false
}

func (l *linuxPaths) OpenFile(p string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	f, errno := l.FS.OpenFile(p, flag, perm)
	return f, l.fix(p, errno)
}

func (l *linuxPaths) Lstat(p string) (sys.Stat_t, experimentalsys.Errno) {
	st, errno := l.FS.Lstat(p)
	return st, l.fix(p, errno)
}

func (l *linuxPaths) Stat(p string) (sys.Stat_t, experimentalsys.Errno) {
	st, errno := l.FS.Stat(p)
	return st, l.fix(p, errno)
}

func (l *linuxPaths) Readlink(p string) (string, experimentalsys.Errno) {
	target, errno := l.FS.Readlink(p)
	return target, l.fix(p, errno)
}

func (l *linuxPaths) Mkdir(p string, perm fs.FileMode) experimentalsys.Errno {
	return l.fix(p, l.FS.Mkdir(p, perm))
}

func (l *linuxPaths) Chmod(p string, perm fs.FileMode) experimentalsys.Errno {
	return l.fix(p, l.FS.Chmod(p, perm))
}

func (l *linuxPaths) Rmdir(p string) experimentalsys.Errno {
	return l.fix(p, l.FS.Rmdir(p))
}

func (l *linuxPaths) Unlink(p string) experimentalsys.Errno {
	return l.fix(p, l.FS.Unlink(p))
}

func (l *linuxPaths) Utimens(p string, atim, mtim int64) experimentalsys.Errno {
	return l.fix(p, l.FS.Utimens(p, atim, mtim))
}

func (l *linuxPaths) Rename(from, to string) experimentalsys.Errno {
	return l.fix(to, l.fix(from, l.FS.Rename(from, to)))
}

func (l *linuxPaths) Link(oldPath, newPath string) experimentalsys.Errno {
	return l.fix(newPath, l.fix(oldPath, l.FS.Link(oldPath, newPath)))
}

func (l *linuxPaths) Symlink(oldPath, linkName string) experimentalsys.Errno {
	return l.fix(linkName, l.FS.Symlink(oldPath, linkName))
}

// fix turns a failure on a path through a file into ENOTDIR. Only failures
// look at the path's parents, so lookups that succeed cost nothing more.
func (l *linuxPaths) fix(p string, errno experimentalsys.Errno) experimentalsys.Errno {
	if errno != 0 && errno != experimentalsys.ENOTDIR && l.throughFile(p) {
		return experimentalsys.ENOTDIR
	}
	return errno
}
