//go:build unix

package wasmpy_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
)

// runUnblocked runs job; should it hang (a FIFO opened before its type was
// checked blocks until a writer comes), it opens the FIFOs for writing to
// free the run, then fails.
func runUnblocked(t *testing.T, job wasmpy.Job, fifos ...string) (*wasmpy.Result, error) {
	t.Helper()
	type ran struct {
		res *wasmpy.Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := testSandbox(t).Run(context.Background(), job)
		done <- ran{res, err}
	}()
	select {
	case r := <-done:
		return r.res, r.err
	case <-time.After(2 * time.Minute): // the job's own timeout is 20s
		for _, f := range fifos {
			if fd, err := syscall.Open(f, syscall.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				syscall.Close(fd)
			}
		}
		<-done
		t.Fatal("the run hung on a FIFO past its timeout")
		return nil, nil
	}
}

// A FIFO in an /app directory is refused like any file that is not a
// plain one, before it is opened to be read: the run never blocks on it.
func TestAppFIFO(t *testing.T) {
	dir := writeTree(t, map[string]string{"ok.py": "X = 1\n"})
	mod, data := filepath.Join(dir, "fifo.py"), filepath.Join(dir, "data")
	require.NoError(t, syscall.Mkfifo(mod, 0o644))
	require.NoError(t, syscall.Mkfifo(data, 0o644))
	res, err := runUnblocked(t, wasmpy.Job{App: openApp(t, dir), Grants: wasmpy.Builtins(), Limits: wasmpy.Limits{Timeout: 20 * time.Second}, Code: `
import os, ok
assert sorted(os.listdir("/app")) == ["ok.py"], os.listdir("/app")
try:
    import fifo
except ImportError:
    pass
else:
    raise AssertionError("a FIFO imported")
try:
    open("/app/data").read()
except PermissionError:
    pass
else:
    raise AssertionError("a FIFO read")
print("ok")
`}, mod, data)
	require.NoError(t, err)
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "ok\n", res.Stdout)

	// A FIFO as the program's __main__.py: no program to run.
	dir = t.TempDir()
	main := filepath.Join(dir, "__main__.py")
	require.NoError(t, syscall.Mkfifo(main, 0o644))
	_, err = runUnblocked(t, wasmpy.Job{App: openApp(t, dir), Limits: wasmpy.Limits{Timeout: 20 * time.Second}}, main)
	require.ErrorIs(t, err, wasmpy.ErrNoMain)
	_, err = os.Stat(main)
	require.NoError(t, err)
}
