package packages

import (
	"archive/zip"
	"bytes"
	"io"
	"io/fs"
	"path"
	"slices"
	"time"
)

// Mount merges sets into one read-only directory tree, the guest's
// site-packages: an fs.FS whose files are seekable (Python seeks in
// sources and data files). Two sets may not both hold a path: the second
// is refused, naming the first. The manifests stay out of sight.
func Mount(sets ...*Set) (fs.FS, error) {
	v := &view{files: map[string]entry{}, dirs: map[string][]string{".": nil}}
	owner := map[string]*Set{}
	for _, s := range sets {
		for _, f := range s.zip.File {
			if f.Name == ManifestName {
				continue
			}
			if other, dup := owner[f.Name]; dup {
				return nil, errorf(s.Path, "%s is also in %s", f.Name, other.Path)
			}
			owner[f.Name] = s
			v.files[f.Name] = entry{set: s, f: f}
			for p := f.Name; p != "."; p = path.Dir(p) {
				dir := path.Dir(p)
				children, seen := v.dirs[dir]
				v.dirs[dir] = append(children, path.Base(p))
				if seen && dir != "." {
					break // dir's own ancestors are in already
				}
			}
		}
	}
	for dir, children := range v.dirs {
		slices.Sort(children)
		v.dirs[dir] = slices.Compact(children)
		if _, clash := v.files[dir]; clash {
			return nil, errorf(owner[dir].Path, "%s is a file in one set and a directory in another", dir)
		}
	}
	return v, nil
}

type entry struct {
	set *Set
	f   *zip.File
}

// view is the merged tree. Its times are the sets' one fixed date.
type view struct {
	files map[string]entry
	dirs  map[string][]string // directory -> the names in it, sorted
}

func (v *view) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if children, ok := v.dirs[name]; ok {
		return &dir{v: v, name: name, children: children}, nil
	}
	e, ok := v.files[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	var data []byte
	if e.f.Method == zip.Store {
		off, err := e.f.DataOffset()
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		data = e.set.data[off : off+int64(e.f.UncompressedSize64)] // zip.Reader checked the bounds
	} else {
		var err error
		if data, err = readEntry(e.f); err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
	}
	return &file{Reader: bytes.NewReader(data), info: info{name: path.Base(name), size: int64(len(data))}}, nil
}

// file is a regular file: its bytes, seekable.
type file struct {
	*bytes.Reader
	info info
}

func (f *file) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *file) Close() error               { return nil }

type dir struct {
	v        *view
	name     string
	children []string
	read     int
}

func (d *dir) Stat() (fs.FileInfo, error) { return info{name: path.Base(d.name), dir: true}, nil }
func (d *dir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.name, Err: fs.ErrInvalid}
}
func (d *dir) Close() error { return nil }

func (d *dir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.children[d.read:]
	if n > 0 && len(rest) == 0 {
		return nil, io.EOF
	}
	if n > 0 && n < len(rest) {
		rest = rest[:n]
	}
	d.read += len(rest)
	out := make([]fs.DirEntry, len(rest))
	for i, name := range rest {
		p := path.Join(d.name, name)
		if _, isDir := d.v.dirs[p]; isDir {
			out[i] = fs.FileInfoToDirEntry(info{name: name, dir: true})
		} else {
			out[i] = fs.FileInfoToDirEntry(info{name: name, size: int64(d.v.files[p].f.UncompressedSize64)})
		}
	}
	return out, nil
}

// info describes a file or directory of the view: read-only to everyone.
type info struct {
	name string
	size int64
	dir  bool
}

func (i info) Name() string       { return i.name }
func (i info) Size() int64        { return i.size }
func (i info) ModTime() time.Time { return epoch }
func (i info) IsDir() bool        { return i.dir }
func (i info) Sys() any           { return nil }
func (i info) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
