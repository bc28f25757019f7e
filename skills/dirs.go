package skills

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Dir is one source of skills for StartDirs: the skill directories at the
// top of FS (only the one called One, when set), named in problems' paths
// as under Root.
type Dir struct {
	FS   fs.FS
	Root string
	One  string
}

// HostDir is the Dir of a directory on the host: a directory of skills, or
// one skill's own directory (the one with a skill.yaml).
func HostDir(dir string) (Dir, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return Dir{}, fmt.Errorf("skills: %w", err)
	}
	if !fi.IsDir() {
		return Dir{}, fmt.Errorf("skills: %s is not a directory", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err == nil {
		// dir is a skill itself, not the directory of skills: load it alone.
		abs, err := filepath.Abs(dir)
		if err != nil {
			return Dir{}, fmt.Errorf("skills: %w", err)
		}
		parent := filepath.Dir(abs)
		return Dir{FS: os.DirFS(parent), Root: parent, One: filepath.Base(abs)}, nil
	}
	return Dir{FS: os.DirFS(dir), Root: dir}, nil
}

// StartDirs starts loading the skills of several sources as one registry;
// see Start. Two sources holding a directory of one name are an error
// (two skills of one name, in directories of different names, are both
// refused, as in one directory).
func StartDirs(ctx context.Context, dirs []Dir, opts LoadOptions) (*Registry, error) {
	if len(dirs) == 1 {
		d := dirs[0]
		if opts.Root == "" {
			opts.Root = d.Root
		}
		fsys := d.FS
		if d.One != "" {
			fsys = oneDir{d.FS, d.One}
		}
		return Start(ctx, fsys, opts)
	}
	u := &union{fss: map[string]fs.FS{}, roots: map[string]string{}}
	for _, d := range dirs {
		entries, err := fs.ReadDir(d.FS, ".")
		if err != nil {
			return nil, fmt.Errorf("skills: %s: %w", d.Root, err)
		}
		for _, e := range entries {
			name := e.Name()
			if !e.IsDir() || d.One != "" && name != d.One {
				continue
			}
			if root, ok := u.roots[name]; ok {
				return nil, fmt.Errorf("skills: %s and %s both hold a directory %q: give each skill directory once", root, d.Root, name)
			}
			u.fss[name], u.roots[name] = d.FS, d.Root
			u.entries = append(u.entries, e)
		}
	}
	slices.SortFunc(u.entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return Start(ctx, u, opts)
}

// union is several sources' skill directories side by side, each served
// by its own source.
type union struct {
	fss     map[string]fs.FS  // top-level name -> its source
	roots   map[string]string // top-level name -> its source's Root
	entries []fs.DirEntry
}

func (u *union) source(name string) (fs.FS, error) {
	top, _, _ := strings.Cut(name, "/")
	if fsys, ok := u.fss[top]; ok && fs.ValidPath(name) {
		return fsys, nil
	}
	return nil, fs.ErrNotExist
}

func (u *union) Open(name string) (fs.File, error) {
	fsys, err := u.source(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return fsys.Open(name)
}

func (u *union) ReadDir(name string) ([]fs.DirEntry, error) {
	if name == "." {
		return slices.Clone(u.entries), nil
	}
	fsys, err := u.source(name)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	return fs.ReadDir(fsys, name)
}

// rootOf is where the skill directory dir (a top-level name) is, for the
// paths users recognise.
func (l *loader) rootOf(dir string) string {
	if l.union != nil {
		top, _, _ := strings.Cut(path.Clean(dir), "/")
		if root, ok := l.union.roots[top]; ok {
			return root
		}
	}
	return l.opts.Root
}
