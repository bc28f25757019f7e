package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"path"
	"strings"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
)

// wasiFuncs are WASI preview1's functions that CPython imports, over the
// file systems the run mounts (the same experimentalsys.FS values wazero
// mounts: the standard library, the site, the run's workspace at / and its
// program at AppMount) and the run's streams, clock and random source in
// its runState. An engine without a WASI of its own over those (wasmtime's
// maps host directories only) registers them; wazero keeps its own.
//
// Each instance has its own descriptor table (wasiFiles), reached through
// the ctx of its calls (withFiles).
var wasiFuncs = []hostFunc{
	wasiFunc("environ_get", "ii", environGet),
	wasiFunc("environ_sizes_get", "ii", environSizesGet),
	wasiFunc("clock_res_get", "ii", clockResGet),
	wasiFunc("clock_time_get", "iIi", clockTimeGet),
	wasiFunc("fd_advise", "iIIi", func(f *wasiFiles, _ guestMemory, s []uint64) uint16 { return f.check(s[0]) }),
	wasiFunc("fd_close", "i", fdClose),
	wasiFunc("fd_datasync", "i", func(f *wasiFiles, _ guestMemory, s []uint64) uint16 {
		return f.withFile(s[0], func(fl experimentalsys.File) experimentalsys.Errno { return fl.Datasync() })
	}),
	wasiFunc("fd_sync", "i", func(f *wasiFiles, _ guestMemory, s []uint64) uint16 {
		return f.withFile(s[0], func(fl experimentalsys.File) experimentalsys.Errno { return fl.Sync() })
	}),
	wasiFunc("fd_fdstat_get", "ii", fdFdstatGet),
	wasiFunc("fd_fdstat_set_flags", "ii", func(f *wasiFiles, _ guestMemory, s []uint64) uint16 {
		return f.withFile(s[0], func(fl experimentalsys.File) experimentalsys.Errno {
			if errno := fl.SetAppend(s[1]&fdflagAppend != 0); errno != 0 {
				return errno
			}
			if nb, ok := fl.(nonblocker); ok {
				return nb.SetNonblock(s[1]&fdflagNonblock != 0)
			}
			return 0
		})
	}),
	wasiFunc("fd_filestat_get", "ii", fdFilestatGet),
	wasiFunc("fd_filestat_set_size", "iI", func(f *wasiFiles, _ guestMemory, s []uint64) uint16 {
		return f.withFile(s[0], func(fl experimentalsys.File) experimentalsys.Errno { return fl.Truncate(int64(s[1])) })
	}),
	wasiFunc("fd_filestat_set_times", "iIIi", func(f *wasiFiles, _ guestMemory, s []uint64) uint16 {
		atim, mtim, errno := f.times(int64(s[1]), int64(s[2]), uint16(s[3]))
		if errno != 0 {
			return wasiErrno(errno)
		}
		return f.withFile(s[0], func(fl experimentalsys.File) experimentalsys.Errno { return fl.Utimens(atim, mtim) })
	}),
	wasiFunc("fd_pread", "iiiIi", func(f *wasiFiles, m guestMemory, s []uint64) uint16 { return f.rw(m, s, true, false) }),
	wasiFunc("fd_pwrite", "iiiIi", func(f *wasiFiles, m guestMemory, s []uint64) uint16 { return f.rw(m, s, true, true) }),
	wasiFunc("fd_read", "iiii", func(f *wasiFiles, m guestMemory, s []uint64) uint16 { return f.rw(m, s, false, false) }),
	wasiFunc("fd_write", "iiii", func(f *wasiFiles, m guestMemory, s []uint64) uint16 { return f.rw(m, s, false, true) }),
	wasiFunc("fd_prestat_get", "ii", fdPrestatGet),
	wasiFunc("fd_prestat_dir_name", "iii", fdPrestatDirName),
	wasiFunc("fd_readdir", "iiiIi", fdReaddir),
	wasiFunc("fd_seek", "iIii", fdSeek),
	wasiFunc("fd_tell", "ii", func(f *wasiFiles, m guestMemory, s []uint64) uint16 {
		return fdSeek(f, m, []uint64{s[0], 0, io.SeekCurrent, s[1]})
	}),
	wasiFunc("path_create_directory", "iii", func(f *wasiFiles, m guestMemory, s []uint64) uint16 {
		return f.atPath(m, s[0], s[1], s[2], func(fsys experimentalsys.FS, p string) experimentalsys.Errno { return fsys.Mkdir(p, 0o777) })
	}),
	wasiFunc("path_filestat_get", "iiiii", pathFilestatGet),
	wasiFunc("path_filestat_set_times", "iiiiIIi", func(f *wasiFiles, m guestMemory, s []uint64) uint16 {
		atim, mtim, errno := f.times(int64(s[4]), int64(s[5]), uint16(s[6]))
		if errno != 0 {
			return wasiErrno(errno)
		}
		return f.atPath(m, s[0], s[2], s[3], func(fsys experimentalsys.FS, p string) experimentalsys.Errno { return fsys.Utimens(p, atim, mtim) })
	}),
	wasiFunc("path_link", "iiiiiii", func(f *wasiFiles, m guestMemory, s []uint64) uint16 {
		return f.twoPaths(m, s[0], s[2], s[3], s[4], s[5], s[6], func(fsys experimentalsys.FS, from, to string) experimentalsys.Errno { return fsys.Link(from, to) })
	}),
	wasiFunc("path_open", "iiiiiIIii", pathOpen),
	wasiFunc("path_readlink", "iiiiii", pathReadlink),
	wasiFunc("path_remove_directory", "iii", func(f *wasiFiles, m guestMemory, s []uint64) uint16 {
		return f.atPath(m, s[0], s[1], s[2], func(fsys experimentalsys.FS, p string) experimentalsys.Errno { return fsys.Rmdir(p) })
	}),
	wasiFunc("path_rename", "iiiiii", func(f *wasiFiles, m guestMemory, s []uint64) uint16 {
		return f.twoPaths(m, s[0], s[1], s[2], s[3], s[4], s[5], func(fsys experimentalsys.FS, from, to string) experimentalsys.Errno { return fsys.Rename(from, to) })
	}),
	wasiFunc("path_symlink", "iiiii", func(f *wasiFiles, m guestMemory, s []uint64) uint16 {
		target, ok := readString(m, s[0], s[1])
		if !ok {
			return errnoFault
		}
		return f.atPath(m, s[2], s[3], s[4], func(fsys experimentalsys.FS, p string) experimentalsys.Errno { return fsys.Symlink(target, p) })
	}),
	wasiFunc("path_unlink_file", "iii", func(f *wasiFiles, m guestMemory, s []uint64) uint16 {
		return f.atPath(m, s[0], s[1], s[2], func(fsys experimentalsys.FS, p string) experimentalsys.Errno { return fsys.Unlink(p) })
	}),
	{module: wasiModule, name: "proc_exit", params: "i", fn: func(_ context.Context, _ instance, s []uint64) {
		panic(sys.NewExitError(uint32(s[0])))
	}},
	wasiFunc("sched_yield", "", func(*wasiFiles, guestMemory, []uint64) uint16 { return 0 }),
	wasiFunc("random_get", "ii", randomGet),
	wasiFunc("sock_accept", "iii", notSocket),
	wasiFunc("sock_recv", "iiiiii", notSocket),
	wasiFunc("sock_send", "iiiii", notSocket),
	wasiFunc("sock_shutdown", "ii", notSocket),
}

const wasiModule = "wasi_snapshot_preview1"

// WASI errnos beside clock.go's.
const (
	errnoAcces       = 2
	errnoAgain       = 6
	errnoExist       = 20
	errnoFbig        = 22
	errnoIntr        = 27
	errnoIo          = 29
	errnoIsdir       = 31
	errnoLoop        = 32
	errnoNametoolong = 37
	errnoNoent       = 44
	errnoNosys       = 52
	errnoNotdir      = 54
	errnoNotempty    = 55
	errnoNotsock     = 57
	errnoNotsup      = 58
	errnoPerm        = 63
	errnoRange       = 68
	errnoRofs        = 69
	errnoSpipe       = 70
	errnoNotcapable  = 76
)

// wasiErrno is errno as WASI numbers it.
func wasiErrno(errno experimentalsys.Errno) uint16 {
	switch errno {
	case 0:
		return 0
	case experimentalsys.EACCES:
		return errnoAcces
	case experimentalsys.EAGAIN:
		return errnoAgain
	case experimentalsys.EBADF:
		return errnoBadf
	case experimentalsys.EEXIST:
		return errnoExist
	case experimentalsys.EFAULT:
		return errnoFault
	case experimentalsys.EINTR:
		return errnoIntr
	case experimentalsys.EINVAL:
		return errnoInval
	case experimentalsys.EIO:
		return errnoIo
	case experimentalsys.EISDIR:
		return errnoIsdir
	case experimentalsys.ELOOP:
		return errnoLoop
	case experimentalsys.ENAMETOOLONG:
		return errnoNametoolong
	case experimentalsys.ENOENT:
		return errnoNoent
	case experimentalsys.ENOSYS:
		return errnoNosys
	case experimentalsys.ENOTDIR:
		return errnoNotdir
	case experimentalsys.ERANGE:
		return errnoRange
	case experimentalsys.ENOTEMPTY:
		return errnoNotempty
	case experimentalsys.ENOTSOCK:
		return errnoNotsock
	case experimentalsys.ENOTSUP:
		return errnoNotsup
	case experimentalsys.EPERM:
		return errnoPerm
	case experimentalsys.EROFS:
		return errnoRofs
	}
	return errnoIo
}

// wasiFunc makes a WASI function of params (see hostFunc) returning an errno.
func wasiFunc(name, params string, fn func(f *wasiFiles, m guestMemory, stack []uint64) uint16) hostFunc {
	return hostFunc{module: wasiModule, name: name, params: params, results: "i", fn: func(ctx context.Context, in instance, stack []uint64) {
		f := filesFrom(ctx)
		if f == nil {
			stack[0] = errnoNosys
			return
		}
		stack[0] = uint64(fn(f, in.memory(), stack))
	}}
}

// nonblocker is a file that keeps O_NONBLOCK (wazero's own files and the
// workspace's do: the flag is only kept and reported).
type nonblocker interface {
	IsNonblock() bool
	SetNonblock(bool) experimentalsys.Errno
}

// guestEnv is the environment every run's guest sees (as wazero's
// moduleConfig gives it).
func guestEnv() []string { return []string{"PYTHONHASHSEED=0", "PYTHONDONTWRITEBYTECODE=1"} }

// wasiMount is a file system the guest finds at path (a preopen).
type wasiMount struct {
	path string
	fs   experimentalsys.FS
}

// wasiFile is an open descriptor: a stream (0-2), a preopen, or a file or
// directory opened in one.
type wasiFile struct {
	mount   int    // index in wasiFiles.mounts; -1 for a stream
	rel     string // its path in the mount, "." for the root
	file    experimentalsys.File
	preopen bool
	dirents []experimentalsys.Dirent // a directory's listing, read at cookie 0
}

// wasiFiles is an instance's descriptor table.
type wasiFiles struct {
	st     *runState
	env    []string
	mounts []wasiMount
	fds    map[uint32]*wasiFile
}

type filesKey struct{}

func withFiles(ctx context.Context, f *wasiFiles) context.Context {
	return context.WithValue(ctx, filesKey{}, f)
}

func filesFrom(ctx context.Context) *wasiFiles {
	f, _ := ctx.Value(filesKey{}).(*wasiFiles)
	return f
}

// newWasiFiles opens the streams and the mounts, in order, as fds 0, 1, 2,
// then 3 on: the guest's libc keeps the preopens it found in its memory, so
// an image made with one table runs only with the same one.
func newWasiFiles(st *runState, env []string, mounts []wasiMount) *wasiFiles {
	f := &wasiFiles{st: st, env: env, mounts: mounts, fds: map[uint32]*wasiFile{}}
	for fd := range uint32(3) {
		f.fds[fd] = &wasiFile{mount: -1}
	}
	for i := range mounts {
		f.fds[uint32(3+i)] = &wasiFile{mount: i, rel: ".", preopen: true}
	}
	return f
}

// close closes every file the guest left open.
func (f *wasiFiles) close() {
	for fd, d := range f.fds {
		if d.file != nil {
			d.file.Close()
		}
		delete(f.fds, fd)
	}
}

func (f *wasiFiles) check(fd uint64) uint16 {
	if _, ok := f.fds[uint32(fd)]; !ok {
		return errnoBadf
	}
	return 0
}

// open is the file of fd, opening a preopen's root on first use.
func (f *wasiFiles) open(fd uint64) (*wasiFile, experimentalsys.Errno) {
	d, ok := f.fds[uint32(fd)]
	if !ok {
		return nil, experimentalsys.EBADF
	}
	if d.file == nil && d.mount >= 0 {
		file, errno := f.mounts[d.mount].fs.OpenFile(".", experimentalsys.O_RDONLY|experimentalsys.O_DIRECTORY, 0)
		if errno != 0 {
			return nil, errno
		}
		d.file = file
	}
	return d, 0
}

func (f *wasiFiles) withFile(fd uint64, fn func(experimentalsys.File) experimentalsys.Errno) uint16 {
	d, errno := f.open(fd)
	if errno != 0 {
		return wasiErrno(errno)
	}
	if d.file == nil { // a stream
		return 0
	}
	return wasiErrno(fn(d.file))
}

func readString(m guestMemory, ptr, n uint64) (string, bool) {
	b, ok := m.Read(uint32(ptr), uint32(n))
	return string(b), ok
}

// resolve is the mount and path in it of p relative to directory fd.
func (f *wasiFiles) resolve(m guestMemory, fd, ptr, n uint64) (experimentalsys.FS, string, int, uint16) {
	p, ok := readString(m, ptr, n)
	if !ok {
		return nil, "", 0, errnoFault
	}
	d, okd := f.fds[uint32(fd)]
	if !okd {
		return nil, "", 0, errnoBadf
	}
	if d.mount < 0 {
		return nil, "", 0, errnoNotdir
	}
	if strings.IndexByte(p, 0) >= 0 {
		return nil, "", 0, errnoInval
	}
	trailing := strings.HasSuffix(p, "/")
	rel := path.Clean(path.Join(d.rel, strings.TrimPrefix(p, "/")))
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, "", 0, errnoNotcapable
	}
	if trailing && rel != "." {
		rel += "/" // the file systems refuse a file named with a slash after it
	}
	return f.mounts[d.mount].fs, rel, d.mount, 0
}

func (f *wasiFiles) atPath(m guestMemory, fd, ptr, n uint64, fn func(experimentalsys.FS, string) experimentalsys.Errno) uint16 {
	fsys, rel, _, e := f.resolve(m, fd, ptr, n)
	if e != 0 {
		return e
	}
	return wasiErrno(fn(fsys, rel))
}

func (f *wasiFiles) twoPaths(m guestMemory, fd1, p1, n1, fd2, p2, n2 uint64, fn func(experimentalsys.FS, string, string) experimentalsys.Errno) uint16 {
	fs1, rel1, mount1, e := f.resolve(m, fd1, p1, n1)
	if e != 0 {
		return e
	}
	_, rel2, mount2, e := f.resolve(m, fd2, p2, n2)
	if e != 0 {
		return e
	}
	if mount1 != mount2 { // across mounts: not supported, as under wazero
		return errnoNosys
	}
	return wasiErrno(fn(fs1, rel1, rel2))
}

// times turns a set_times request into Utimens's arguments.
func (f *wasiFiles) times(atim, mtim int64, flags uint16) (int64, int64, experimentalsys.Errno) {
	const atimSet, atimNow, mtimSet, mtimNow = 1, 2, 4, 8
	pick := func(t int64, set, now bool) (int64, experimentalsys.Errno) {
		switch {
		case set && now:
			return 0, experimentalsys.EINVAL
		case set:
			return t, 0
		case now:
			return f.st.clock.wallNanos(), 0
		}
		return experimentalsys.UTIME_OMIT, 0
	}
	a, e := pick(atim, flags&atimSet != 0, flags&atimNow != 0)
	if e != 0 {
		return 0, 0, e
	}
	m, e := pick(mtim, flags&mtimSet != 0, flags&mtimNow != 0)
	return a, m, e
}

func environSizesGet(f *wasiFiles, m guestMemory, s []uint64) uint16 {
	size := 0
	for _, e := range f.env {
		size += len(e) + 1
	}
	if !m.WriteUint32Le(uint32(s[0]), uint32(len(f.env))) || !m.WriteUint32Le(uint32(s[1]), uint32(size)) {
		return errnoFault
	}
	return 0
}

func environGet(f *wasiFiles, m guestMemory, s []uint64) uint16 {
	ptrs, buf := uint32(s[0]), uint32(s[1])
	for i, e := range f.env {
		if !m.WriteUint32Le(ptrs+4*uint32(i), buf) || !m.Write(buf, append([]byte(e), 0)) {
			return errnoFault
		}
		buf += uint32(len(e) + 1)
	}
	return 0
}

func clockResGet(_ *wasiFiles, m guestMemory, s []uint64) uint16 {
	if s[0] != clockRealtime && s[0] != clockMonotonic {
		return errnoInval
	}
	b, ok := m.Read(uint32(s[1]), 8)
	if !ok {
		return errnoFault
	}
	binary.LittleEndian.PutUint64(b, 1)
	return 0
}

func clockTimeGet(f *wasiFiles, m guestMemory, s []uint64) uint16 {
	var t int64
	switch s[0] {
	case clockRealtime:
		t = f.st.clock.wallNanos()
	case clockMonotonic:
		t = f.st.clock.nanotime()
	default:
		return errnoInval
	}
	b, ok := m.Read(uint32(s[2]), 8)
	if !ok {
		return errnoFault
	}
	binary.LittleEndian.PutUint64(b, uint64(t))
	return 0
}

func fdClose(f *wasiFiles, _ guestMemory, s []uint64) uint16 {
	d, ok := f.fds[uint32(s[0])]
	if !ok {
		return errnoBadf
	}
	delete(f.fds, uint32(s[0]))
	if d.file != nil {
		return wasiErrno(d.file.Close())
	}
	return 0
}

// WASI file types and flags.
const (
	filetypeUnknown     = 0
	filetypeBlockDevice = 1
	filetypeCharDevice  = 2
	filetypeDirectory   = 3
	filetypeRegular     = 4
	filetypeSymlink     = 7

	fdflagAppend   = 1
	fdflagNonblock = 4

	rightFdRead  = 1 << 1
	rightFdSeek  = 1 << 2
	rightFdTell  = 1 << 5
	rightFdWrite = 1 << 6
	// The rights fd_fdstat_get reports, wazero's: rights are not enforced
	// (the file systems refuse what they do not allow), but libc keeps what
	// it is told in the guest's memory, so both engines tell it the same
	// and an image or a session's state made on one runs on the other.
	rightsFile = 1<<0 | rightFdRead | rightFdSeek | 1<<3 | 1<<4 | rightFdTell | rightFdWrite | 1<<7 | 1<<8 |
		1<<21 | 1<<22 | 1<<23 | 1<<27
	rightsDir = 1<<0 | 1<<3 | 1<<4 | 1<<9 | 1<<10 | 1<<11 | 1<<12 | 1<<13 | 1<<14 | 1<<15 | 1<<16 | 1<<17 |
		1<<18 | 1<<19 | 1<<20 | 1<<21 | 1<<23 | 1<<24 | 1<<25 | 1<<26
)

func filetype(mode fs.FileMode) uint8 {
	switch {
	case mode.IsRegular():
		return filetypeRegular
	case mode.IsDir():
		return filetypeDirectory
	case mode&fs.ModeSymlink != 0:
		return filetypeSymlink
	case mode&fs.ModeCharDevice != 0:
		return filetypeCharDevice
	case mode&fs.ModeDevice != 0:
		return filetypeBlockDevice
	}
	return filetypeUnknown
}

func fdFdstatGet(f *wasiFiles, m guestMemory, s []uint64) uint16 {
	b, ok := m.Read(uint32(s[1]), 24)
	if !ok {
		return errnoFault
	}
	d, errno := f.open(s[0])
	if errno != 0 {
		return wasiErrno(errno)
	}
	clear(b)
	// A stream is a device that can seek, so not a terminal (isatty), as
	// under wazero: the guest's stdout is block-buffered.
	typ, flags := uint8(filetypeBlockDevice), uint16(0)
	if d.file != nil {
		st, errno := d.file.Stat()
		if errno != 0 {
			return wasiErrno(errno)
		}
		typ = filetype(st.Mode)
		if d.file.IsAppend() {
			flags |= fdflagAppend
		}
		if nb, ok := d.file.(nonblocker); ok && nb.IsNonblock() {
			flags |= fdflagNonblock
		}
	}
	b[0] = typ
	binary.LittleEndian.PutUint16(b[2:], flags)
	base, inheriting := uint64(rightsFile), uint64(0)
	switch typ {
	case filetypeDirectory:
		base, inheriting = rightsDir, rightsFile|rightsDir
	case filetypeCharDevice:
		base = rightsFile &^ rightFdSeek &^ rightFdTell
	}
	binary.LittleEndian.PutUint64(b[8:], base)
	binary.LittleEndian.PutUint64(b[16:], inheriting)
	return 0
}

func writeFilestat(b []byte, st sys.Stat_t) {
	binary.LittleEndian.PutUint64(b, st.Dev)
	binary.LittleEndian.PutUint64(b[8:], st.Ino)
	binary.LittleEndian.PutUint64(b[16:], uint64(filetype(st.Mode)))
	binary.LittleEndian.PutUint64(b[24:], st.Nlink)
	binary.LittleEndian.PutUint64(b[32:], uint64(st.Size))
	binary.LittleEndian.PutUint64(b[40:], uint64(st.Atim))
	binary.LittleEndian.PutUint64(b[48:], uint64(st.Mtim))
	binary.LittleEndian.PutUint64(b[56:], uint64(st.Ctim))
}

func fdFilestatGet(f *wasiFiles, m guestMemory, s []uint64) uint16 {
	b, ok := m.Read(uint32(s[1]), 64)
	if !ok {
		return errnoFault
	}
	d, errno := f.open(s[0])
	if errno != 0 {
		return wasiErrno(errno)
	}
	st := sys.Stat_t{Mode: fs.ModeDevice, Nlink: 1}
	if d.file != nil {
		if st, errno = d.file.Stat(); errno != 0 {
			return wasiErrno(errno)
		}
	}
	writeFilestat(b, st)
	return 0
}

func pathFilestatGet(f *wasiFiles, m guestMemory, s []uint64) uint16 {
	b, ok := m.Read(uint32(s[4]), 64)
	if !ok {
		return errnoFault
	}
	fsys, rel, _, e := f.resolve(m, s[0], s[2], s[3])
	if e != 0 {
		return e
	}
	var st sys.Stat_t
	var errno experimentalsys.Errno
	if s[1]&1 != 0 { // LOOKUP_SYMLINK_FOLLOW
		st, errno = fsys.Stat(rel)
	} else {
		st, errno = fsys.Lstat(rel)
	}
	if errno != 0 {
		return wasiErrno(errno)
	}
	writeFilestat(b, st)
	return 0
}

// rw serves fd_read, fd_write, fd_pread and fd_pwrite: (fd, iovs, iovs_len,
// [offset,] result).
func (f *wasiFiles) rw(m guestMemory, s []uint64, positioned, write bool) uint16 {
	fd, iovs, n := s[0], uint32(s[1]), uint32(s[2])
	var off int64
	result := uint32(s[3])
	if positioned {
		off, result = int64(s[3]), uint32(s[4])
	}
	d, errno := f.open(fd)
	if errno != 0 {
		return wasiErrno(errno)
	}
	if n > 1024 {
		return errnoInval
	}
	total := uint32(0)
	for i := range n {
		ptr, ok1 := m.ReadUint32Le(iovs + 8*i)
		size, ok2 := m.ReadUint32Le(iovs + 8*i + 4)
		if !ok1 || !ok2 {
			return errnoFault
		}
		buf, ok := m.Read(ptr, size)
		if !ok {
			return errnoFault
		}
		var k int
		var errno experimentalsys.Errno
		switch {
		case d.file != nil && positioned && write:
			k, errno = d.file.Pwrite(buf, off)
			off += int64(k)
		case d.file != nil && positioned:
			k, errno = d.file.Pread(buf, off)
			off += int64(k)
		case d.file != nil && write:
			k, errno = d.file.Write(buf)
		case d.file != nil:
			k, errno = d.file.Read(buf)
		case positioned:
			return errnoSpipe
		default:
			k, errno = f.stream(uint32(fd), buf, write)
		}
		total += uint32(k)
		if errno != 0 {
			if total > 0 { // what was done is reported; the error comes next time
				break
			}
			return wasiErrno(errno)
		}
		if k < len(buf) || (!write && d.file == nil) { // a short read, or a stream's one read
			break
		}
	}
	if !m.WriteUint32Le(result, total) {
		return errnoFault
	}
	return 0
}

// stream reads stdin or writes stdout or stderr.
func (f *wasiFiles) stream(fd uint32, buf []byte, write bool) (int, experimentalsys.Errno) {
	switch {
	case fd == 0 && !write:
		n, err := f.st.readStdin(buf)
		var errno experimentalsys.Errno
		switch {
		case err == nil || err == io.EOF:
		case errors.As(err, &errno):
		default:
			errno = experimentalsys.EIO
		}
		return n, errno
	case fd == 1 && write:
		n, _ := f.st.stdout.Write(buf)
		return n, 0
	case fd == 2 && write:
		n, _ := f.st.stderr.Write(buf)
		return n, 0
	}
	return 0, experimentalsys.EBADF
}

func fdPrestatGet(f *wasiFiles, m guestMemory, s []uint64) uint16 {
	d, ok := f.fds[uint32(s[0])]
	if !ok || !d.preopen {
		return errnoBadf
	}
	b, ok := m.Read(uint32(s[1]), 8)
	if !ok {
		return errnoFault
	}
	clear(b)
	binary.LittleEndian.PutUint32(b[4:], uint32(len(f.mounts[d.mount].path)))
	return 0
}

func fdPrestatDirName(f *wasiFiles, m guestMemory, s []uint64) uint16 {
	d, ok := f.fds[uint32(s[0])]
	if !ok || !d.preopen {
		return errnoBadf
	}
	name := f.mounts[d.mount].path
	if uint64(len(name)) > s[2] {
		return errnoNametoolong
	}
	if !m.Write(uint32(s[1]), []byte(name)) {
		return errnoFault
	}
	return 0
}

// fdReaddir lists a directory: ".", "..", then its entries; the cookie is
// an entry's index. The listing is read afresh at cookie 0.
func fdReaddir(f *wasiFiles, m guestMemory, s []uint64) uint16 {
	buf, bufLen, cookie, used := uint32(s[1]), uint32(s[2]), s[3], uint32(s[4])
	out, ok := m.Read(buf, bufLen)
	if !ok {
		return errnoFault
	}
	d, errno := f.open(s[0])
	if errno != 0 {
		return wasiErrno(errno)
	}
	if d.file == nil {
		return errnoNotdir
	}
	if cookie == 0 || d.dirents == nil {
		fsys := f.mounts[d.mount].fs
		dir, errno := fsys.OpenFile(d.rel, experimentalsys.O_RDONLY|experimentalsys.O_DIRECTORY, 0)
		if errno != 0 {
			return wasiErrno(errno)
		}
		list, errno := dir.Readdir(-1)
		dir.Close()
		if errno != 0 {
			return wasiErrno(errno)
		}
		d.dirents = append([]experimentalsys.Dirent{{Name: ".", Type: fs.ModeDir}, {Name: "..", Type: fs.ModeDir}}, list...)
	}
	if cookie > uint64(len(d.dirents)) {
		return errnoInval
	}
	n := uint32(0)
	for i := cookie; i < uint64(len(d.dirents)) && n < bufLen; i++ {
		e := d.dirents[i]
		var ent [24]byte
		binary.LittleEndian.PutUint64(ent[0:], i+1)
		binary.LittleEndian.PutUint64(ent[8:], e.Ino)
		binary.LittleEndian.PutUint32(ent[16:], uint32(len(e.Name)))
		ent[20] = filetype(e.Type)
		if e.Type == 0 {
			ent[20] = filetypeRegular
		}
		n += uint32(copy(out[n:], ent[:]))
		n += uint32(copy(out[n:], e.Name))
	}
	if !m.WriteUint32Le(used, n) {
		return errnoFault
	}
	return 0
}

func fdSeek(f *wasiFiles, m guestMemory, s []uint64) uint16 {
	d, errno := f.open(s[0])
	if errno != 0 {
		return wasiErrno(errno)
	}
	if d.file == nil {
		// A stream cannot seek: ENOSYS, as wazero says, not ESPIPE, since
		// the guest keeps the error it formats (see rightsFile).
		return errnoNosys
	}
	if s[2] > io.SeekEnd {
		return errnoInval
	}
	if dir, _ := d.file.IsDir(); dir {
		return errnoIsdir
	}
	pos, errno := d.file.Seek(int64(s[1]), int(s[2]))
	if errno != 0 {
		return wasiErrno(errno)
	}
	b, ok := m.Read(uint32(s[3]), 8)
	if !ok {
		return errnoFault
	}
	binary.LittleEndian.PutUint64(b, uint64(pos))
	return 0
}

// pathOpen: (fd, dirflags, path, path_len, oflags, rights_base,
// rights_inheriting, fdflags, result_fd).
func pathOpen(f *wasiFiles, m guestMemory, s []uint64) uint16 {
	fsys, rel, mount, e := f.resolve(m, s[0], s[2], s[3])
	if e != 0 {
		return e
	}
	flags := openFlags(uint16(s[1]), uint16(s[4]), uint16(s[7]), s[5])
	file, errno := fsys.OpenFile(rel, flags, 0o666)
	if errno != 0 {
		return wasiErrno(errno)
	}
	if flags&experimentalsys.O_DIRECTORY != 0 {
		if dir, _ := file.IsDir(); !dir {
			file.Close()
			return errnoNotdir
		}
	}
	fd := uint32(3)
	for ; ; fd++ {
		if _, used := f.fds[fd]; !used {
			break
		}
	}
	if !m.WriteUint32Le(uint32(s[8]), fd) {
		file.Close()
		return errnoFault
	}
	f.fds[fd] = &wasiFile{mount: mount, rel: strings.TrimSuffix(rel, "/"), file: file}
	return 0
}

// openFlags maps path_open's flags and rights to an open's, as wazero does.
func openFlags(dirflags, oflags, fdflags uint16, rights uint64) experimentalsys.Oflag {
	const (
		oCreat, oDirectory, oExcl, oTrunc = 1, 2, 4, 8
		fdDsync, fdRsync, fdSync          = 2, 8, 16
	)
	var flags experimentalsys.Oflag
	if dirflags&1 == 0 { // not LOOKUP_SYMLINK_FOLLOW
		flags |= experimentalsys.O_NOFOLLOW
	}
	if oflags&oDirectory != 0 {
		flags |= experimentalsys.O_DIRECTORY
	} else if oflags&oExcl != 0 {
		flags |= experimentalsys.O_EXCL
	}
	mode := experimentalsys.O_RDONLY
	if oflags&oTrunc != 0 {
		flags |= experimentalsys.O_TRUNC
		mode = experimentalsys.O_RDWR
	}
	if oflags&oCreat != 0 {
		flags |= experimentalsys.O_CREAT
		mode = experimentalsys.O_RDWR
	}
	if fdflags&fdflagNonblock != 0 {
		flags |= experimentalsys.O_NONBLOCK
	}
	if fdflags&fdflagAppend != 0 {
		flags |= experimentalsys.O_APPEND
		mode = experimentalsys.O_RDWR
	}
	if fdflags&fdDsync != 0 {
		flags |= experimentalsys.O_DSYNC
	}
	if fdflags&fdRsync != 0 {
		flags |= experimentalsys.O_RSYNC
	}
	if fdflags&fdSync != 0 {
		flags |= experimentalsys.O_SYNC
	}
	const rw = rightFdRead | rightFdWrite
	switch {
	case rights&rw == rw:
		flags |= experimentalsys.O_RDWR
	case rights&rightFdWrite != 0:
		flags |= experimentalsys.O_WRONLY
	case rights&rightFdRead != 0:
		flags |= experimentalsys.O_RDONLY
	default:
		flags |= mode
	}
	return flags
}

func pathReadlink(f *wasiFiles, m guestMemory, s []uint64) uint16 {
	fsys, rel, _, e := f.resolve(m, s[0], s[1], s[2])
	if e != 0 {
		return e
	}
	target, errno := fsys.Readlink(rel)
	if errno != 0 {
		return wasiErrno(errno)
	}
	b, ok := m.Read(uint32(s[3]), uint32(s[4]))
	if !ok {
		return errnoFault
	}
	n := copy(b, target)
	if !m.WriteUint32Le(uint32(s[5]), uint32(n)) {
		return errnoFault
	}
	return 0
}

func randomGet(f *wasiFiles, m guestMemory, s []uint64) uint16 {
	b, ok := m.Read(uint32(s[0]), uint32(s[1]))
	if !ok {
		return errnoFault
	}
	if _, err := io.ReadFull(f.st.random, b); err != nil {
		return errnoIo
	}
	return 0
}

func notSocket(*wasiFiles, guestMemory, []uint64) uint16 { return errnoNotsock }
