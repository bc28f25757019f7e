package resident

import (
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// One resident holds the socket; a client reaches it and passes it a
// descriptor that works on the other side; once it closes, none runs.
func TestListenDialPassFiles(t *testing.T) {
	dir, err := os.MkdirTemp("", "wr")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket, lock := Paths(dir, "/bin/wasmpy")
	_, err = Dial(socket)
	require.ErrorIs(t, err, ErrNotRunning)

	ln, err := Listen(socket, lock)
	require.NoError(t, err)
	_, err = Listen(socket, lock)
	require.ErrorIs(t, err, ErrRunning)

	type msg struct{ Text string }
	got := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err
			return
		}
		defer c.Close()
		var m msg
		files, err := c.Recv(&m)
		if err == nil && (len(files) != 1 || m.Text != "hello") {
			err = io.ErrUnexpectedEOF
		}
		if err == nil {
			_, err = files[0].WriteString("through the passed pipe")
			files[0].Close()
		}
		if err == nil {
			err = c.Send(msg{Text: "done"})
		}
		got <- err
	}()
	c, err := Dial(socket)
	require.NoError(t, err)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	require.NoError(t, c.Send(msg{Text: "hello"}, w))
	w.Close()
	var m msg
	_, err = c.Recv(&m)
	require.NoError(t, err)
	require.Equal(t, "done", m.Text)
	require.NoError(t, <-got)
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Equal(t, "through the passed pipe", string(b))
	c.Close()

	require.NoError(t, ln.Close())
	require.NoFileExists(t, socket)
	_, err = Dial(socket)
	require.ErrorIs(t, err, ErrNotRunning)
	ln, err = Listen(socket, lock) // the lock is free again
	require.NoError(t, err)
	ln.Close()
}

// A socket file left by a resident that died is replaced.
func TestListenReplacesDeadSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "wr")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket, lock := Paths(dir, "/bin/wasmpy")
	require.NoError(t, os.WriteFile(socket, nil, 0o600))
	_, err = Dial(socket)
	require.Error(t, err)
	ln, err := Listen(socket, lock)
	require.NoError(t, err)
	defer ln.Close()
	c, err := Dial(socket)
	require.NoError(t, err)
	c.Close()
}
