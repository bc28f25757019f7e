//go:build unix

package hostfile

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok")
	require.NoError(t, os.WriteFile(ok, []byte("hello"), 0o644))
	b, err := ReadFile(ok, 5)
	require.NoError(t, err)
	require.Equal(t, "hello", string(b))

	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	sparse := filepath.Join(dir, "sparse")
	f, err := os.Create(sparse)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(1288490189)) // 1.2 GiB, nothing written
	require.NoError(t, f.Close())

	for _, tc := range []struct {
		path, want string
		is         error
	}{
		{ok + "x", ok + "x: no such file or directory", fs.ErrNotExist},
		{"/dev/zero", "/dev/zero: not a regular file (a character device)", ErrNotRegular},
		{dir, dir + ": not a regular file (a directory)", ErrNotRegular},
		{fifo, fifo + ": not a regular file (a FIFO)", ErrNotRegular}, // opened without waiting for a writer
		{sparse, sparse + ": 1.2 GiB, more than the limit of 64 MiB", ErrTooLarge},
	} {
		_, err := ReadFile(tc.path, 64<<20)
		require.EqualError(t, err, tc.want)
		require.ErrorIs(t, err, tc.is)
	}
	_, err = ReadFile(ok, 4)
	require.EqualError(t, err, ok+": 5 bytes, more than the limit of 4 bytes")
}

// A file that grows past its bound after it was checked is cut off there.
func TestReadFileGrows(t *testing.T) {
	p := filepath.Join(t.TempDir(), "grows")
	require.NoError(t, os.WriteFile(p, []byte("1234"), 0o644))
	f, err := Open(p, 8)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, os.WriteFile(p, []byte("1234567890"), 0o644))
	_, err = f.ReadAll()
	require.EqualError(t, err, p+": more than the limit of 8 bytes")
	require.ErrorIs(t, err, ErrTooLarge)
}

// Input (a script, stdin) may be a stream, read up to its bound.
func TestReadInput(t *testing.T) {
	_, err := ReadInput("/dev/zero", 1<<20)
	require.EqualError(t, err, "/dev/zero: more than the limit of 1 MiB")
	_, err = ReadInput(t.TempDir(), 1<<20)
	require.ErrorIs(t, err, ErrNotRegular)

	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	go func() {
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Write([]byte("print(1)\n"))
			w.Close()
		}
	}()
	b, err := ReadInput(fifo, 1<<20)
	require.NoError(t, err)
	require.Equal(t, "print(1)\n", string(b))
}
