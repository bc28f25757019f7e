package engine

import (
	"io/fs"

	"github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	wsys "github.com/tetratelabs/wazero/sys"
)

// The guest's mounts: the standard library read-only at stdlibMount, the
// package sets' site-packages read-only at packages.SiteDir (siteConfig),
// the run's program read-only at AppMount (Run.App), and at / the run's
// own file system (Run.FS). The list is part of the snapshot image
// (wasi-libc keeps its preopens in memory), so it is part of the image's
// key.
const (
	stdlibMount = "/usr/local/lib/python3.13"
	filesMount  = "/"
	AppMount    = "/app"
)

// boundFS is an instance's file system at /. It forwards to the file
// system of the run bound to the instance's runState, since a parked
// instance (and its mounts) exists before its run does. Until then, and
// for a run without one, it is empty.
type boundFS struct {
	st  *runState
	app bool // the run's App, not its FS
}

func (b boundFS) fs() sys.FS {
	f := b.st.fs
	if b.app {
		f = b.st.app
	}
	if f != nil {
		return f
	}
	return emptyFS{}
}

func (b boundFS) OpenFile(p string, flag sys.Oflag, perm fs.FileMode) (sys.File, sys.Errno) {
	return b.fs().OpenFile(p, flag, perm)
}
func (b boundFS) Lstat(p string) (wsys.Stat_t, sys.Errno)      { return b.fs().Lstat(p) }
func (b boundFS) Stat(p string) (wsys.Stat_t, sys.Errno)       { return b.fs().Stat(p) }
func (b boundFS) Mkdir(p string, perm fs.FileMode) sys.Errno   { return b.fs().Mkdir(p, perm) }
func (b boundFS) Chmod(p string, perm fs.FileMode) sys.Errno   { return b.fs().Chmod(p, perm) }
func (b boundFS) Rename(from, to string) sys.Errno             { return b.fs().Rename(from, to) }
func (b boundFS) Rmdir(p string) sys.Errno                     { return b.fs().Rmdir(p) }
func (b boundFS) Unlink(p string) sys.Errno                    { return b.fs().Unlink(p) }
func (b boundFS) Link(from, to string) sys.Errno               { return b.fs().Link(from, to) }
func (b boundFS) Symlink(from, to string) sys.Errno            { return b.fs().Symlink(from, to) }
func (b boundFS) Readlink(p string) (string, sys.Errno)        { return b.fs().Readlink(p) }
func (b boundFS) Utimens(p string, atim, mtim int64) sys.Errno { return b.fs().Utimens(p, atim, mtim) }

// appFS serves a run's App read-only: its files as they are when they can
// seek, else copied whole (as a zip's are), and a change refused with
// EROFS as a read-only mount refuses it.
func appFS(app fs.FS) sys.FS {
	files := seekableFS{app}
	return &linuxPaths{FS: &readOnlyFS{sysfs.ReadFS{FS: &sysfs.AdaptFS{FS: files}}}, files: files}
}

// emptyFS is an empty directory. (WASI's fd_prestat_get, which wasi-libc
// calls while the snapshot is made, opens a mount's root.)
type emptyFS struct{ sys.UnimplementedFS }

func (emptyFS) OpenFile(p string, flag sys.Oflag, _ fs.FileMode) (sys.File, sys.Errno) {
	switch {
	case p != "." && p != "/":
		return nil, sys.ENOENT
	case flag&(sys.O_WRONLY|sys.O_RDWR) != 0:
		return nil, sys.EISDIR
	}
	return emptyDir{}, 0
}

func (e emptyFS) Lstat(p string) (wsys.Stat_t, sys.Errno) { return e.Stat(p) }

func (emptyFS) Stat(p string) (wsys.Stat_t, sys.Errno) {
	if p != "." && p != "/" {
		return wsys.Stat_t{}, sys.ENOENT
	}
	return emptyDir{}.Stat()
}

type emptyDir struct{ sys.UnimplementedFile }

func (emptyDir) IsDir() (bool, sys.Errno) { return true, 0 }

func (emptyDir) Stat() (wsys.Stat_t, sys.Errno) {
	return wsys.Stat_t{Mode: fs.ModeDir | 0o555, Nlink: 2}, 0
}

func (emptyDir) Readdir(int) ([]sys.Dirent, sys.Errno) { return nil, 0 }
