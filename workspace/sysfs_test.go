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
