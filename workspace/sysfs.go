package workspace

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/tetratelabs/wazero/experimental/sys"
	wsys "github.com/tetratelabs/wazero/sys"
)

// SysFS returns the file system the guest mounts at /: the workspace at
// /workspace (the guest's cwd), an overlay-only /tmp, and nothing else.
// now is the run's clock, for the times the overlay records.
//
// What Linux would do is the rule, with these differences: a workspace
// limit (file size, quota, file count, open files) fails with EIO; links
// cannot be made (EPERM); renaming between the workspace and /tmp works;
// a stable symlink that stays inside the workspace is seen as a symlink to
// what it names, one that leaves it (or a hard-linked file) is EACCES and
// left out of listings.
func (w *Workspace) SysFS(now func() int64) sys.FS {
	w.mu.Lock()
	defer w.mu.Unlock()
	if now != nil {
		w.now = now
	}
	return &guestFS{w: w}
}

type guestFS struct {
	sys.UnimplementedFS
	w *Workspace
}

// rootIno numbers the guest's "/".
const rootIno = 1 << 62

// at splits a guest path into its tree and the path inside it; the tree is
// nil for "/" itself. dirOnly is set for a path that ended in "/".
func (g *guestFS) at(p string) (t *tree, rel string, dirOnly bool, err error) {
	p, dirOnly, err = guestPath(p)
	if err != nil || p == "." {
		return nil, ".", dirOnly, err
	}
	top, rest, _ := strings.Cut(p, "/")
	if rest == "" {
		rest = "."
	}
	switch top {
	case "workspace":
		return &g.w.ws, rest, dirOnly, nil
	case "tmp":
		return &g.w.tmp, rest, dirOnly, nil
	}
	return nil, "", false, sys.ENOENT
}

// errno is what the guest sees of err.
func errno(err error) sys.Errno {
	var e sys.Errno
	switch {
	case err == nil:
		return 0
	case errors.As(err, &e):
		return e
	}
	return sys.EIO // a limit, or a failure of the host
}

func rootStat() wsys.Stat_t {
	return wsys.Stat_t{Dev: 1, Ino: rootIno, Mode: fs.ModeDir | 0o755, Nlink: 2}
}

// stat describes e, the entry at p.
func (t *tree) stat(p string, e entry) wsys.Stat_t {
	st := wsys.Stat_t{Dev: 1, Ino: t.ino(p, e), Nlink: 1}
	if n := e.node; n != nil {
		st.Mode, st.Size, st.Mtim = n.mode, int64(len(n.data)), n.mtime
		if n.dir {
			st.Mode |= fs.ModeDir
			st.Nlink = 2
		}
	} else {
		st.Mode, st.Size, st.Mtim = e.fi.Mode()&(fs.ModeDir|fs.ModePerm), e.fi.Size(), e.fi.ModTime().UnixNano()
	}
	st.Atim, st.Ctim = st.Mtim, st.Mtim
	if n := e.node; n != nil && n.ownAtime {
		st.Atim = n.atime
	}
	return st
}

func (g *guestFS) Stat(p string) (wsys.Stat_t, sys.Errno) { return g.stat(p, true) }

func (g *guestFS) Lstat(p string) (wsys.Stat_t, sys.Errno) { return g.stat(p, false) }

func (g *guestFS) stat(p string, follow bool) (wsys.Stat_t, sys.Errno) {
	t, rel, dirOnly, err := g.at(p)
	if err != nil {
		return wsys.Stat_t{}, errno(err)
	}
	if t == nil {
		return rootStat(), 0
	}
	g.w.mu.Lock()
	defer g.w.mu.Unlock()
	e, err := t.resolve(rel)
	if err != nil {
		return wsys.Stat_t{}, errno(err)
	}
	if dirOnly && !e.isDir() {
		return wsys.Stat_t{}, sys.ENOTDIR
	}
	st := t.stat(rel, e)
	if e.link && !follow {
		target, _ := t.root.Readlink(rel)
		st.Mode, st.Size, st.Nlink = fs.ModeSymlink|0o777, int64(len(target)), 1
	}
	return st, 0
}

// Readlink answers for stable symlinks that stay inside the workspace
// (their targets are relative: os.Root refuses absolute ones).
func (g *guestFS) Readlink(p string) (string, sys.Errno) {
	t, rel, _, err := g.at(p)
	if err != nil {
		return "", errno(err)
	}
	if t == nil {
		return "", sys.EINVAL
	}
	g.w.mu.Lock()
	defer g.w.mu.Unlock()
	e, err := t.resolve(rel)
	switch {
	case err != nil:
		return "", errno(err)
	case !e.link:
		return "", sys.EINVAL
	}
	target, err := t.root.Readlink(rel)
	if err != nil || path.IsAbs(target) {
		return "", sys.EACCES
	}
	return target, 0
}

func (g *guestFS) OpenFile(p string, flag sys.Oflag, perm fs.FileMode) (sys.File, sys.Errno) {
	t, rel, dirOnly, err := g.at(p)
	if err != nil {
		return nil, errno(err)
	}
	w := g.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.open) >= MaxOpenFiles {
		return nil, sys.EIO
	}
	write := flag&(sys.O_WRONLY|sys.O_RDWR) != 0
	trunc := flag&sys.O_TRUNC != 0
	if t == nil {
		if write || trunc {
			return nil, sys.EISDIR
		}
		return w.track(&handle{w: w, dir: true}), 0
	}
	e, err := t.resolve(rel)
	switch {
	case errors.Is(err, sys.ENOENT) && flag&sys.O_CREAT != 0 && rel != ".":
		if dirOnly || flag&sys.O_DIRECTORY != 0 {
			return nil, sys.EISDIR
		}
		if err := t.parentDir(rel); err != nil {
			return nil, errno(err)
		}
		n := &node{mode: 0o644, mtime: w.now()}
		if err := t.addNode(rel, n); err != nil {
			return nil, errno(err)
		}
		e = entry{node: n}
	case err != nil:
		return nil, errno(err)
	case flag&(sys.O_CREAT|sys.O_EXCL) == sys.O_CREAT|sys.O_EXCL:
		return nil, sys.EEXIST
	}
	if e.isDir() {
		if write || trunc {
			return nil, sys.EISDIR
		}
		return w.track(&handle{w: w, t: t, path: rel, dir: true}), 0
	}
	if dirOnly || flag&sys.O_DIRECTORY != 0 {
		return nil, sys.ENOTDIR
	}
	h := &handle{w: w, t: t, path: rel, read: flag&sys.O_WRONLY == 0, write: write,
		appending: flag&sys.O_APPEND != 0, nonblock: flag&sys.O_NONBLOCK != 0}
	if !write && !trunc && e.node == nil {
		if h.f, h.fi, err = t.openStable(rel); err != nil {
			return nil, errno(err)
		}
		return w.track(h), 0
	}
	if h.node, err = t.own(rel, e, !trunc); err != nil {
		return nil, errno(err)
	}
	if trunc && len(h.node.data) > 0 {
		w.resize(h.node, 0)
		h.node.mtime = w.now()
	}
	h.node.opens++
	return w.track(h), 0
}

// track counts h among the open handles. w.mu is held.
func (w *Workspace) track(h *handle) *handle {
	w.open[h] = struct{}{}
	return h
}

func (g *guestFS) Mkdir(p string, _ fs.FileMode) sys.Errno {
	t, rel, _, err := g.at(p)
	switch {
	case errors.Is(err, sys.ENOENT):
		return sys.EACCES // a new name at the top
	case err != nil:
		return errno(err)
	case t == nil || rel == ".":
		return sys.EEXIST
	}
	g.w.mu.Lock()
	defer g.w.mu.Unlock()
	switch _, err := t.resolve(rel); {
	case err == nil:
		return sys.EEXIST
	case !errors.Is(err, sys.ENOENT):
		return errno(err)
	}
	if err := t.parentDir(rel); err != nil {
		return errno(err)
	}
	return errno(t.addNode(rel, &node{dir: true, mode: 0o755, mtime: g.w.now()}))
}

func (g *guestFS) Rmdir(p string) sys.Errno {
	t, rel, _, err := g.at(p)
	switch {
	case err != nil:
		return errno(err)
	case t == nil || rel == ".":
		return sys.EACCES
	}
	g.w.mu.Lock()
	defer g.w.mu.Unlock()
	ents, err := t.list(rel)
	switch {
	case err != nil:
		return errno(err)
	case len(ents) > 0:
		return sys.ENOTEMPTY
	}
	t.removeTree(rel)
	return 0
}

func (g *guestFS) Unlink(p string) sys.Errno {
	t, rel, dirOnly, err := g.at(p)
	switch {
	case err != nil:
		return errno(err)
	case t == nil || rel == ".":
		return sys.EISDIR
	}
	g.w.mu.Lock()
	defer g.w.mu.Unlock()
	e, err := t.resolve(rel)
	switch {
	case err != nil:
		return errno(err)
	case e.isDir():
		return sys.EISDIR
	case dirOnly:
		return sys.ENOTDIR
	}
	t.remove(rel)
	return 0
}

// Rename moves a file or a directory, within or between the workspace and
// /tmp. What comes from the stable layer is copied into the overlay (within
// the limits) and whited out at its old name.
func (g *guestFS) Rename(from, to string) sys.Errno {
	st, sp, _, err := g.at(from)
	if err != nil {
		return errno(err)
	}
	dt, dp, _, err := g.at(to)
	switch {
	case errors.Is(err, sys.ENOENT):
		return sys.EACCES // a new name at the top
	case err != nil:
		return errno(err)
	}
	if st == nil || dt == nil || sp == "." || dp == "." {
		return sys.EACCES
	}
	w := g.w
	w.mu.Lock()
	defer w.mu.Unlock()
	se, err := st.resolve(sp)
	if err != nil {
		return errno(err)
	}
	if st == dt && dp == sp {
		return 0
	}
	if st == dt && strings.HasPrefix(dp, sp+"/") {
		return sys.EINVAL
	}
	de, derr := dt.resolve(dp)
	switch {
	case derr == nil && se.isDir() && !de.isDir():
		return sys.ENOTDIR
	case derr == nil && !se.isDir() && de.isDir():
		return sys.EISDIR
	case derr == nil && de.isDir():
		if ents, err := dt.list(dp); err != nil || len(ents) > 0 {
			return sys.ENOTEMPTY
		}
	case errors.Is(derr, sys.ENOENT):
		if err := dt.parentDir(dp); err != nil {
			return errno(err)
		}
	case derr != nil:
		return errno(derr)
	}
	if !se.isDir() {
		n, err := st.own(sp, se, true)
		if err != nil {
			return errno(err)
		}
		if derr == nil {
			dt.remove(dp)
		}
		st.remove(sp)
		return errno(dt.relink(dp, n))
	}
	moved, err := st.detach(sp, se)
	if err != nil {
		return errno(err)
	}
	if derr == nil {
		dt.removeTree(dp)
	}
	st.removeTree(sp)
	for _, m := range moved {
		at := dp
		if m.rel != "." {
			at = join(dp, m.rel)
		}
		if err := dt.relink(at, m.n); err != nil {
			return errno(err) // not reached: detach checked the limits
		}
	}
	return 0
}

// moved is a node of a directory being renamed, at its path below it.
type moved struct {
	rel string
	n   *node
}

// detach gathers the directory at p and everything under it as overlay
// nodes, reading stable files up, parents first; it changes nothing, and
// fails if the copies would pass the workspace's limits.
func (t *tree) detach(p string, e entry) ([]moved, error) {
	w := t.w
	var need int64
	var files, dirs int
	out := []moved{{".", e.node}}
	if e.node == nil {
		out[0].n = &node{dir: true, mode: e.fi.Mode().Perm(), mtime: e.fi.ModTime().UnixNano()}
		dirs++
	}
	var stable []int // indexes in out of stable files to read
	err := t.walk(p, nil, func(q string, e entry) error {
		m := moved{rel: q[len(p)+1:], n: e.node}
		switch {
		case e.node != nil:
		case e.isDir() && e.link:
			return sys.ENOTSUP // a symlink to a directory cannot be carried over
		case e.isDir():
			m.n = &node{dir: true, mode: e.fi.Mode().Perm(), mtime: e.fi.ModTime().UnixNano()}
			dirs++
		default:
			m.n = &node{mode: e.fi.Mode().Perm(), mtime: e.fi.ModTime().UnixNano()}
			stable = append(stable, len(out))
			need += e.fi.Size()
			files++
		}
		out = append(out, m)
		return nil
	})
	switch {
	case err != nil:
		return nil, err
	case w.size+need > w.maxOverlay:
		return nil, limitf("workspace quota exceeded")
	case w.files+files > w.maxFiles || w.dirs+dirs > w.maxFiles:
		return nil, limitf("workspace file limit reached")
	}
	for _, i := range stable {
		data, err := t.readStable(join(p, out[i].rel), w.maxFile)
		if err != nil {
			return nil, err
		}
		out[i].n.data = data
	}
	return out, nil
}

// relink links n at p again after a rename; its bytes count again unless a
// handle kept them counted.
func (t *tree) relink(p string, n *node) error {
	if n.opens == 0 {
		t.w.size += int64(len(n.data))
	}
	n.linked = false
	return t.addNode(p, n)
}

func (g *guestFS) Chmod(p string, perm fs.FileMode) sys.Errno {
	return g.change(p, func(n *node) { n.mode = perm.Perm() })
}

func (g *guestFS) Utimens(p string, atim, mtim int64) sys.Errno {
	return g.change(p, func(n *node) { n.setTimes(atim, mtim) })
}

// change applies fn to the overlay node at p, copying a stable file up.
func (g *guestFS) change(p string, fn func(*node)) sys.Errno {
	t, rel, _, err := g.at(p)
	switch {
	case err != nil:
		return errno(err)
	case t == nil:
		return sys.EPERM
	}
	g.w.mu.Lock()
	defer g.w.mu.Unlock()
	e, err := t.resolve(rel)
	if err != nil {
		return errno(err)
	}
	n, err := t.own(rel, e, true)
	if err != nil {
		return errno(err)
	}
	fn(n)
	return 0
}

func (g *guestFS) Link(_, _ string) sys.Errno    { return sys.EPERM }
func (g *guestFS) Symlink(_, _ string) sys.Errno { return sys.EPERM }

// handle is an open file or directory. An overlay file is its node; a
// stable file is read from disk as it is read; a directory is listed when
// first read (and again after a rewind).
type handle struct {
	sys.UnimplementedFile
	w    *Workspace
	t    *tree // nil for "/"
	path string

	node *node       // an overlay file
	f    *os.File    // a stable file
	fi   fs.FileInfo // its stat

	dir                    bool
	read, write, appending bool
	nonblock               bool // O_NONBLOCK: kept for fcntl, no effect on a file in memory
	off                    int64
	ents                   []sys.Dirent // a directory's listing, nil until read
	pos                    int
	closed                 bool
}

func (h *handle) IsDir() (bool, sys.Errno) { return h.dir, 0 }
func (h *handle) IsAppend() bool           { return h.appending }

func (h *handle) SetAppend(enable bool) sys.Errno {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	h.appending = enable
	return 0
}

// IsNonblock, SetNonblock and Poll make a handle a sys.PollableFile, so
// os.set_blocking works on it as on a Linux file: the flag is kept, and a
// file is always ready.
func (h *handle) IsNonblock() bool {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	return h.nonblock
}

func (h *handle) SetNonblock(enable bool) sys.Errno {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	if h.closed {
		return sys.EBADF
	}
	h.nonblock = enable
	return 0
}

func (h *handle) Poll(sys.Pflag, int32) (bool, sys.Errno) { return true, 0 }

var _ sys.PollableFile = (*handle)(nil) // wazero finds it by a type assertion

func (h *handle) Dev() (uint64, sys.Errno) { return 1, 0 }

func (h *handle) Ino() (wsys.Inode, sys.Errno) {
	st, errno := h.Stat()
	return st.Ino, errno
}

func (h *handle) Stat() (wsys.Stat_t, sys.Errno) {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	switch {
	case h.closed:
		return wsys.Stat_t{}, sys.EBADF
	case h.t == nil:
		return rootStat(), 0
	case h.node != nil:
		return h.t.stat(h.path, entry{node: h.node}), 0
	case h.f != nil:
		return h.t.stat(h.path, entry{fi: h.fi}), 0
	}
	e, err := h.t.resolve(h.path)
	if err != nil {
		return wsys.Stat_t{}, errno(err)
	}
	return h.t.stat(h.path, e), 0
}

func (h *handle) Read(buf []byte) (int, sys.Errno) {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	n, errno := h.pread(buf, h.off)
	h.off += int64(n)
	return n, errno
}

func (h *handle) Pread(buf []byte, off int64) (int, sys.Errno) {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	return h.pread(buf, off)
}

func (h *handle) pread(buf []byte, off int64) (int, sys.Errno) {
	switch {
	case h.closed || !h.read:
		return 0, sys.EBADF
	case h.dir:
		return 0, sys.EISDIR
	case off < 0:
		return 0, sys.EINVAL
	case h.f != nil:
		n, err := h.f.ReadAt(buf, off)
		if err != nil && err != io.EOF {
			return n, sys.EIO
		}
		return n, 0
	case off >= int64(len(h.node.data)):
		return 0, 0
	}
	return copy(buf, h.node.data[off:]), 0
}

// offset is int64 by another name: sys.File's Seek returns an Errno where
// io.Seeker returns an error, and go vet checks any method named Seek whose
// first parameter is spelled int64 against io.Seeker.
type offset = int64

func (h *handle) Seek(off offset, whence int) (int64, sys.Errno) {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	if h.closed {
		return 0, sys.EBADF
	}
	if h.dir {
		if off != 0 || whence != io.SeekStart {
			return 0, sys.EINVAL
		}
		h.ents, h.pos = nil, 0
		return 0, 0
	}
	switch whence {
	case io.SeekCurrent:
		off += h.off
	case io.SeekEnd:
		if h.f != nil {
			off += h.fi.Size()
		} else {
			off += int64(len(h.node.data))
		}
	case io.SeekStart:
	default:
		return 0, sys.EINVAL
	}
	if off < 0 {
		return 0, sys.EINVAL
	}
	h.off = off
	return off, 0
}

func (h *handle) Readdir(n int) ([]sys.Dirent, sys.Errno) {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	switch {
	case h.closed:
		return nil, sys.EBADF
	case !h.dir:
		return nil, sys.ENOTDIR
	}
	if h.ents == nil {
		if err := h.listDir(); err != nil {
			return nil, errno(err)
		}
	}
	rest := h.ents[h.pos:]
	if n > 0 && n < len(rest) {
		rest = rest[:n]
	}
	h.pos += len(rest)
	return rest, 0
}

func (h *handle) listDir() error {
	h.ents = []sys.Dirent{}
	if h.t == nil {
		w := h.w
		h.ents = append(h.ents,
			sys.Dirent{Name: "tmp", Ino: w.tmp.top.ino, Type: fs.ModeDir},
			sys.Dirent{Name: "workspace", Ino: w.ws.top.ino, Type: fs.ModeDir})
		return nil
	}
	ents, err := h.t.list(h.path)
	if err != nil {
		return err
	}
	for _, d := range ents {
		typ := fs.FileMode(0)
		switch {
		case d.e.link:
			typ = fs.ModeSymlink
		case d.e.isDir():
			typ = fs.ModeDir
		}
		h.ents = append(h.ents, sys.Dirent{Name: d.name, Ino: h.t.ino(join(h.path, d.name), d.e), Type: typ})
	}
	return nil
}

func (h *handle) Write(buf []byte) (int, sys.Errno) {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	if h.appending && h.node != nil {
		h.off = int64(len(h.node.data))
	}
	n, errno := h.pwrite(buf, h.off)
	h.off += int64(n)
	return n, errno
}

func (h *handle) Pwrite(buf []byte, off int64) (int, sys.Errno) {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	return h.pwrite(buf, off)
}

func (h *handle) pwrite(buf []byte, off int64) (int, sys.Errno) {
	switch {
	case h.closed || !h.write:
		return 0, sys.EBADF
	case off < 0:
		return 0, sys.EINVAL
	case len(buf) == 0:
		return 0, 0
	}
	n := h.node
	if end := off + int64(len(buf)); end > int64(len(n.data)) {
		if err := h.w.resize(n, end); err != nil {
			return 0, errno(err)
		}
	}
	copy(n.data[off:], buf)
	n.mtime = h.w.now()
	return len(buf), 0
}

func (h *handle) Truncate(size int64) sys.Errno {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	switch {
	case h.closed:
		return sys.EBADF
	case h.dir:
		return sys.EISDIR
	case !h.write:
		return sys.EBADF
	case size < 0:
		return sys.EINVAL
	}
	if err := h.w.resize(h.node, size); err != nil {
		return errno(err)
	}
	h.node.mtime = h.w.now()
	return 0
}

func (h *handle) Utimens(atim, mtim int64) sys.Errno {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	switch {
	case h.closed:
		return sys.EBADF
	case h.node == nil:
		return sys.EPERM // a stable file or directory: change it by path
	}
	h.node.setTimes(atim, mtim)
	return 0
}

// setTimes sets what utime gives; sys.UTIME_OMIT leaves a time as it is.
func (n *node) setTimes(atim, mtim int64) {
	if atim != sys.UTIME_OMIT {
		n.atime, n.ownAtime = atim, true
	}
	if mtim != sys.UTIME_OMIT {
		n.mtime = mtim
	}
}

func (h *handle) Close() sys.Errno {
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	h.release()
	return 0
}

// release closes h once; an overlay node unlinked meanwhile frees its
// bytes with its last handle. w.mu is held.
func (h *handle) release() {
	if h.closed {
		return
	}
	h.closed = true
	delete(h.w.open, h)
	if h.f != nil {
		h.f.Close()
	}
	if n := h.node; n != nil {
		if n.opens--; n.opens == 0 && !n.linked {
			h.w.size -= int64(len(n.data))
		}
	}
}
