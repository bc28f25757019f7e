package workspace

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero/experimental/sys"
)

func newFS(t *testing.T, cfg Config) (*Workspace, sys.FS) {
	t.Helper()
	w, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { w.Close() })
	return w, w.SysFS(func() int64 { return 1e18 })
}

func create(t *testing.T, fsys sys.FS, p string, data string) sys.File {
	t.Helper()
	f, errno := fsys.OpenFile(p, sys.O_RDWR|sys.O_CREAT|sys.O_TRUNC, 0o644)
	require.Zero(t, errno, p)
	n, errno := f.Write([]byte(data))
	require.Zero(t, errno)
	require.Equal(t, len(data), n)
	return f
}

// The overlay's bytes are counted while a path or a handle holds them, so
// the quota is neither leaked nor dodged by removing an open file.
func TestSysFSAccounting(t *testing.T) {
	w, fsys := newFS(t, Config{MaxOverlayBytes: 100})
	f := create(t, fsys, "workspace/a", "0123456789")
	require.Equal(t, int64(10), w.size)
	require.Zero(t, fsys.Unlink("workspace/a"))
	_, errno := f.Write(make([]byte, 95))
	require.Equal(t, sys.EIO, errno, "an unlinked open file still counts")
	_, errno = f.Write(make([]byte, 80))
	require.Zero(t, errno)
	require.Equal(t, int64(90), w.size)
	require.Zero(t, f.Close())
	require.Equal(t, int64(0), w.size, "its last handle frees it")
	require.Equal(t, 0, w.files)

	g := create(t, fsys, "tmp/b", "xyz")
	require.Zero(t, g.Close())
	require.Zero(t, fsys.Mkdir("workspace/d", 0o755))
	require.Zero(t, fsys.Rename("tmp/b", "workspace/d/b"))
	require.Zero(t, fsys.Rename("workspace/d", "workspace/e"))
	require.Equal(t, int64(3), w.size)
	require.Equal(t, 1, w.files)
	require.Equal(t, 1, w.dirs)
	data, ok := w.OverlayFile("e/b")
	require.True(t, ok)
	require.Equal(t, "xyz", string(data))
}

// Removing and renaming stable entries changes only the overlay.
func TestSysFSWhiteouts(t *testing.T) {
	stable := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(stable, "dir", "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(stable, "dir", "sub", "f"), []byte("stable"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(stable, "top"), []byte("top"), 0o644))
	w, fsys := newFS(t, Config{Stable: stable})
	ctx := context.Background()

	require.Equal(t, sys.ENOTEMPTY, fsys.Rmdir("workspace/dir"))
	require.Zero(t, fsys.Unlink("workspace/dir/sub/f"))
	require.Zero(t, fsys.Rmdir("workspace/dir/sub"))
	require.Zero(t, fsys.Rmdir("workspace/dir"))
	_, errno := fsys.Stat("workspace/dir/sub/f")
	require.Equal(t, sys.ENOENT, errno)
	require.Zero(t, fsys.Mkdir("workspace/dir", 0o755))
	_, errno = fsys.Stat("workspace/dir/sub")
	require.Equal(t, sys.ENOENT, errno, "a directory made over a removed one is opaque")

	require.Zero(t, fsys.Rename("workspace/top", "workspace/dir/top"))
	_, err := w.ReadFile(ctx, "top")
	require.Error(t, err)
	got, err := w.ReadFile(ctx, "dir/top")
	require.NoError(t, err)
	require.Equal(t, "top", string(got))
	files, err := w.ListFiles(ctx, "**")
	require.NoError(t, err)
	require.Equal(t, []string{"dir/top"}, files)

	b, err := os.ReadFile(filepath.Join(stable, "dir", "sub", "f"))
	require.NoError(t, err)
	require.Equal(t, "stable", string(b), "the disk is never touched")
	_, err = os.Stat(filepath.Join(stable, "top"))
	require.NoError(t, err)
}

// Nothing above the mounts can be made or removed; nothing else is there.
func TestSysFSRoot(t *testing.T) {
	_, fsys := newFS(t, Config{})
	require.Equal(t, sys.EACCES, fsys.Mkdir("etc", 0o755))
	require.Equal(t, sys.EACCES, fsys.Rmdir("workspace"))
	require.Equal(t, sys.EACCES, fsys.Rename("workspace", "w2"))
	_, errno := fsys.OpenFile("etc/passwd", sys.O_RDONLY, 0)
	require.Equal(t, sys.ENOENT, errno)
	_, errno = fsys.OpenFile("new", sys.O_RDWR|sys.O_CREAT, 0o644)
	require.Equal(t, sys.ENOENT, errno)
	for _, p := range []string{"workspace/a\x01b", `workspace/a\b`} {
		_, errno = fsys.OpenFile(p, sys.O_RDWR|sys.O_CREAT, 0o644)
		require.Equal(t, sys.EPERM, errno, p)
	}
}

// FuzzSysFS drives the guest's file system with arbitrary operations and
// paths over a stable tree with links out: nothing panics, the disk never
// changes, nothing outside is ever read, and the accounting stays true.
func FuzzSysFS(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7}, "workspace/a", "workspace/sub/b")
	f.Add([]byte{7, 3, 0, 6, 5}, "workspace/escape", "tmp/x")
	f.Add([]byte{2, 6, 4}, "workspace/sub", "workspace/sub2/")
	f.Add([]byte{1, 1, 3}, "workspace/inlink", "workspace/../x")
	f.Fuzz(func(t *testing.T, ops []byte, p, q string) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		stable := t.TempDir()
		outside := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("SECRET"), 0o644))
		require.NoError(t, os.MkdirAll(filepath.Join(stable, "sub"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(stable, "sub", "f"), []byte("stable"), 0o644))
		require.NoError(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(stable, "escape")))
		require.NoError(t, os.Symlink("sub/f", filepath.Join(stable, "inlink")))
		require.NoError(t, os.Link(filepath.Join(outside, "secret"), filepath.Join(stable, "hard")))
		w, fsys := newFS(t, Config{Stable: stable, MaxFiles: 8, MaxOverlayBytes: 64})
		var open []sys.File
		for i, op := range ops {
			a, b := p, q
			if i%2 == 1 {
				a, b = q, p
			}
			switch op % 9 {
			case 0:
				if fl, errno := fsys.OpenFile(a, sys.O_RDWR|sys.O_CREAT, 0o644); errno == 0 {
					fl.Write([]byte("0123456789"))
					open = append(open, fl)
				}
			case 1:
				if fl, errno := fsys.OpenFile(a, sys.O_RDONLY, 0); errno == 0 {
					buf := make([]byte, 64)
					n, _ := fl.Read(buf)
					require.NotContains(t, string(buf[:n]), "SECRET")
					fl.Readdir(-1)
					fl.Close()
				}
			case 2:
				fsys.Mkdir(a, 0o755)
			case 3:
				fsys.Unlink(a)
			case 4:
				fsys.Rmdir(a)
			case 5:
				fsys.Rename(a, b)
			case 6:
				fsys.Stat(a)
				fsys.Lstat(b)
				fsys.Readlink(a)
			case 7:
				if len(open) > 0 {
					open[0].Close()
					open = open[1:]
				}
			case 8:
				fsys.Chmod(a, 0o600)
				fsys.Utimens(b, 1, 2)
			}
		}
		for _, fl := range open {
			fl.Close()
		}
		w.mu.Lock()
		var size int64
		files, dirs := 0, 0
		for _, tr := range []*tree{&w.ws, &w.tmp} {
			for _, n := range tr.nodes {
				if n.dir {
					dirs++
				} else {
					files++
					size += int64(len(n.data))
				}
			}
		}
		require.Equal(t, size, w.size, "bytes accounted")
		require.Equal(t, files, w.files)
		require.Equal(t, dirs, w.dirs)
		require.LessOrEqual(t, size, int64(64))
		w.mu.Unlock()
		b, err := os.ReadFile(filepath.Join(stable, "sub", "f"))
		require.NoError(t, err)
		require.Equal(t, "stable", string(b))
		ents, err := os.ReadDir(stable)
		require.NoError(t, err)
		require.Len(t, ents, 4)
	})
}
