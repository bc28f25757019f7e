package workspace

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"

	"github.com/tetratelabs/wazero/experimental/sys"
)

// tree is one directory tree of the workspace: a stable layer (root, or nil)
// under overlay nodes. A path is clean and relative ("." for the top).
//
// The overlay holds files and directories (nodes) and whiteouts (gone): a
// stable path that was removed or renamed away, hiding it and everything
// under it. An overlay directory made where a whiteout is stays opaque: the
// stable entries under the old name stay hidden. w.mu guards it all.
type tree struct {
	w     *Workspace
	name  string // "workspace" or "tmp", for the inode hash
	root  *os.Root
	top   *node
	nodes map[string]*node
	gone  map[string]struct{}
}

// node is an overlay file or directory. Open handles hold it, so a renamed
// or removed file stays usable through them, as an inode does.
type node struct {
	dir   bool
	data  []byte
	mode  fs.FileMode // permission bits
	mtime int64
	// atime is the access time utime set; until it sets one, a file's
	// atime reads as its mtime (as relatime leaves it after a read).
	atime    int64
	ownAtime bool
	ino      uint64
	opens    int  // handles holding it
	linked   bool // reachable by a path
}

func (w *Workspace) newTree(name string, root *os.Root) tree {
	return tree{w: w, name: name, root: root, nodes: map[string]*node{}, gone: map[string]struct{}{},
		top: &node{dir: true, mode: 0o755, mtime: w.now(), ino: w.newIno(), linked: true}}
}

// entry is what a path names in the merged view: an overlay node, or a
// stable file or directory (fi, the target's when a symlink led to it).
type entry struct {
	node *node
	fi   fs.FileInfo
	link bool // a stable symlink (inside the root) led to it
}

func (e entry) isDir() bool {
	if e.node != nil {
		return e.node.dir
	}
	return e.fi.IsDir()
}

// parent is the directory holding p ("." for a top-level name).
func parent(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return "."
}

func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// resolve finds what p names.
func (t *tree) resolve(p string) (entry, error) {
	if p == "." {
		return entry{node: t.top}, nil
	}
	if n, ok := t.nodes[p]; ok {
		return entry{node: n}, nil
	}
	if err := t.hidden(p); err != nil {
		return entry{}, err
	}
	return t.stable(p)
}

// hidden fails when p cannot be a stable path: an overlay file is on its
// way (ENOTDIR) or a whiteout covers it (ENOENT).
func (t *tree) hidden(p string) error {
	for i := range len(p) {
		if p[i] == '/' {
			if n, ok := t.nodes[p[:i]]; ok && !n.dir {
				return sys.ENOTDIR
			}
		}
	}
	for a := p; ; a = parent(a) {
		if _, ok := t.gone[a]; ok {
			return sys.ENOENT
		}
		if !strings.Contains(a, "/") {
			return nil
		}
	}
}

// stable looks p up in the stable layer, following symlinks that stay
// inside it, and refuses anything that is not a plain file or directory.
func (t *tree) stable(p string) (entry, error) {
	if t.root == nil {
		return entry{}, sys.ENOENT
	}
	lfi, err := t.root.Lstat(p)
	if err != nil {
		return entry{}, stableErrno(err)
	}
	fi, link := lfi, lfi.Mode()&fs.ModeSymlink != 0
	if link {
		if fi, err = t.root.Stat(p); err != nil {
			return entry{}, stableErrno(err)
		}
	}
	if !fi.IsDir() && (!fi.Mode().IsRegular() || links(fi) > 1) {
		return entry{}, sys.EACCES
	}
	return entry{fi: fi, link: link}, nil
}

// stableErrno maps an error of the stable layer to what the guest sees.
func stableErrno(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return sys.ENOENT
	case errors.Is(err, syscall.ENOTDIR):
		return sys.ENOTDIR
	case errors.Is(err, syscall.ENAMETOOLONG):
		return sys.ENAMETOOLONG
	default:
		// os.Root refuses symlinks that leave the directory (and absolute
		// ones); permission and loop errors land here too.
		return sys.EACCES
	}
}

// hasStable reports whether p names something in the stable layer that
// the merged view shows (or would, but for an overlay node over it).
func (t *tree) hasStable(p string) bool {
	if t.root == nil {
		return false
	}
	if p == "." {
		return true
	}
	if t.hidden(p) != nil {
		return false
	}
	_, err := t.root.Lstat(p)
	return err == nil
}

// dirent is one name of a merged directory listing.
type dirent struct {
	name string
	e    entry
}

// list returns the merged entries of directory p, sorted by name. Stable
// names that cannot be read (symlinks out, hard-linked files, devices) are
// left out, as list_files leaves them out.
func (t *tree) list(p string) ([]dirent, error) {
	e, err := t.resolve(p)
	if err != nil {
		return nil, err
	}
	if !e.isDir() {
		return nil, sys.ENOTDIR
	}
	found := map[string]dirent{}
	if t.hasStable(p) { // false under a whiteout: an overlay directory there is opaque
		if err := t.listStable(p, found); err != nil {
			return nil, err
		}
	}
	prefix := p + "/"
	if p == "." {
		prefix = ""
	}
	for k, n := range t.nodes {
		if rest, ok := strings.CutPrefix(k, prefix); ok && !strings.Contains(rest, "/") {
			found[rest] = dirent{name: rest, e: entry{node: n}}
		}
	}
	out := make([]dirent, 0, len(found))
	for _, d := range found {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

func (t *tree) listStable(p string, found map[string]dirent) error {
	f, err := openRead(t.root, p)
	if err != nil {
		return stableErrno(err)
	}
	defer f.Close()
	for {
		ents, err := f.ReadDir(256)
		for _, d := range ents {
			child := join(p, d.Name())
			if _, ok := t.gone[child]; ok {
				continue
			}
			if _, ok := t.nodes[child]; ok {
				continue
			}
			if e, err := t.stable(child); err == nil {
				found[d.Name()] = dirent{name: d.Name(), e: e}
			}
		}
		if err == io.EOF || len(ents) == 0 {
			return nil
		}
		if err != nil {
			return stableErrno(err)
		}
	}
}

// ino numbers what e is: an overlay node its own, a stable file a hash of
// the host file's identity (so its names share it, as on the host, without
// showing the host's numbers), or of its path where that is unknown.
func (t *tree) ino(p string, e entry) uint64 {
	if e.node != nil {
		return e.node.ino
	}
	h := fnv.New64a()
	if dev, ino, ok := fileID(e.fi); ok {
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:8], dev)
		binary.LittleEndian.PutUint64(b[8:], ino)
		h.Write(b[:])
	} else {
		h.Write([]byte(t.name + "/" + p))
	}
	return h.Sum64() | 1<<63
}

// addNode links a new overlay node at p, counting it against the limits.
func (t *tree) addNode(p string, n *node) error {
	w := t.w
	if n.dir {
		if w.dirs >= w.maxFiles {
			return limitf("workspace directory limit reached: cannot make %q, the overlay already holds %d directories", p, w.dirs)
		}
		w.dirs++
	} else {
		if w.files >= w.maxFiles {
			return limitf("workspace file limit reached: cannot create %q, the overlay already holds %d files", p, w.files)
		}
		w.files++
	}
	n.linked = true
	if n.ino == 0 {
		n.ino = w.newIno()
	}
	t.nodes[p] = n
	return nil
}

// unlinkNode takes the node at p out of the tree; its bytes stay counted
// while a handle holds it.
func (t *tree) unlinkNode(p string) {
	n, ok := t.nodes[p]
	if !ok {
		return
	}
	delete(t.nodes, p)
	n.linked = false
	if n.dir {
		t.w.dirs--
		return
	}
	t.w.files--
	if n.opens == 0 {
		t.w.size -= int64(len(n.data))
	}
}

// mkdirs makes every missing directory on the way to p, as write_file does.
func (t *tree) mkdirs(p string) error {
	if p == "." {
		return nil
	}
	if err := t.mkdirs(parent(p)); err != nil {
		return err
	}
	e, err := t.resolve(p)
	switch {
	case err == nil && e.isDir():
		return nil
	case err == nil:
		return sys.ENOTDIR
	case err != sys.ENOENT:
		return err
	}
	return t.addNode(p, &node{dir: true, mode: 0o755, mtime: t.w.now()})
}

// parentDir checks that p's parent is a directory p can be made in.
func (t *tree) parentDir(p string) error {
	e, err := t.resolve(parent(p))
	if err != nil {
		return err
	}
	if !e.isDir() {
		return sys.ENOTDIR
	}
	return nil
}

// readStable reads a stable file whole, refusing one over limit bytes.
func (t *tree) readStable(p string, limit int64) ([]byte, error) {
	f, fi, err := t.openStable(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > limit {
		return nil, limitf("file too large: %d bytes, the limit is %d bytes per file", fi.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, sys.EIO
	}
	if int64(len(data)) > limit {
		return nil, limitf("file too large: over %d bytes, the limit per file", limit)
	}
	return data, nil
}

// openStable opens the stable file p for reading, checking that what was
// opened is what was looked up (a file swapped for a link meanwhile is refused).
func (t *tree) openStable(p string) (*os.File, fs.FileInfo, error) {
	e, err := t.stable(p)
	if err != nil {
		return nil, nil, err
	}
	f, err := openRead(t.root, p)
	if err != nil {
		return nil, nil, stableErrno(err)
	}
	if fi, err := f.Stat(); err != nil || !os.SameFile(e.fi, fi) {
		f.Close()
		return nil, nil, sys.EACCES
	}
	return f, e.fi, nil
}

// own makes p's entry an overlay node, copying a stable file up (its
// contents too when keep is set), and returns it.
func (t *tree) own(p string, e entry, keep bool) (*node, error) {
	if e.node != nil {
		return e.node, nil
	}
	n := &node{dir: e.fi.IsDir(), mode: e.fi.Mode().Perm(), mtime: e.fi.ModTime().UnixNano()}
	if !n.dir && keep {
		data, err := t.readStable(p, t.w.maxFile)
		if err != nil {
			return nil, err
		}
		if err := t.w.resize(n, int64(len(data))); err != nil {
			return nil, err
		}
		copy(n.data, data)
	}
	if err := t.addNode(p, n); err != nil {
		t.w.size -= int64(len(n.data))
		return nil, err
	}
	return n, nil
}

// remove takes p out of the merged view: its overlay node goes, and a
// whiteout hides what the stable layer has there.
func (t *tree) remove(p string) {
	stable := t.hasStable(p)
	t.unlinkNode(p)
	if stable {
		t.gone[p] = struct{}{}
	}
}

// removeTree removes directory p and everything the overlay holds under
// it; whiteouts under p become redundant and go too.
func (t *tree) removeTree(p string) {
	prefix := p + "/"
	for k := range t.nodes {
		if strings.HasPrefix(k, prefix) {
			t.unlinkNode(k)
		}
	}
	stable := t.hasStable(p)
	for k := range t.gone {
		if strings.HasPrefix(k, prefix) {
			delete(t.gone, k)
		}
	}
	t.unlinkNode(p)
	if stable {
		t.gone[p] = struct{}{}
	}
}

// walk calls fn for every entry under directory p in the merged view,
// parents before children, not descending into stable symlinks to
// directories (which may loop). descend, when not nil, prunes directories.
func (t *tree) walk(p string, descend func(string) bool, fn func(string, entry) error) error {
	ents, err := t.list(p)
	if err != nil {
		return err
	}
	for _, d := range ents {
		child := join(p, d.name)
		if err := fn(child, d.e); err != nil {
			return err
		}
		if d.e.isDir() && !d.e.link && (descend == nil || descend(child)) {
			if err := t.walk(child, descend, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// guestPath checks a path as the guest's file system receives it (clean,
// relative; wazero has refused ".." and absolute paths) against the
// workspace's path rules, and says whether it must name a directory.
func guestPath(p string) (string, bool, error) {
	dirOnly := strings.HasSuffix(p, "/")
	p = strings.TrimRight(p, "/")
	if p == "" {
		p = "."
	}
	if len(p) > MaxPathBytes {
		return "", false, sys.ENAMETOOLONG
	}
	p = path.Clean(p)
	if p == ".." || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "/") {
		return "", false, sys.EPERM
	}
	for elem := range strings.SplitSeq(p, "/") {
		if len(elem) > MaxNameBytes {
			return "", false, sys.ENAMETOOLONG
		}
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return "", false, sys.EPERM
		}
	}
	return p, dirOnly, nil
}
