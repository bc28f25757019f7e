package resident

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

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

// A frame's header is checked against the bound of its direction before
// anything is allocated for it, and a body is read as it arrives: a header
// that announces much and sends little costs what it sends.
func TestRecvBoundsFrames(t *testing.T) {
	dir, err := os.MkdirTemp("", "wr")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket, lock := Paths(dir, "/bin/wasmpy")
	ln, err := Listen(socket, lock)
	require.NoError(t, err)
	defer ln.Close()

	for _, tc := range []struct {
		name   string
		size   uint32
		body   string
		want   error
		wantIn string
	}{
		{"past the bound", MaxRequest + 1, "", ErrTooLarge, "the limit is 201326592"},
		{"the old bound", 1<<30 - 1, "", ErrTooLarge, "1073741823 bytes announced"},
		{"announced, not sent", MaxRequest, `{"a":`, io.ErrUnexpectedEOF, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: socket, Net: "unix"})
			require.NoError(t, err)
			defer raw.Close()
			_, err = raw.Write(append(binary.BigEndian.AppendUint32(nil, tc.size), tc.body...))
			require.NoError(t, err)
			if tc.want == io.ErrUnexpectedEOF {
				raw.CloseWrite()
			}
			c, err := ln.Accept()
			require.NoError(t, err)
			defer c.Close()
			c.SetReadDeadline(time.Now().Add(time.Minute)) // a hang guard: the refusal needs no body
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			var v map[string]any
			_, err = c.Recv(&v)
			runtime.ReadMemStats(&after)
			require.ErrorIs(t, err, tc.want)
			if tc.wantIn != "" {
				require.ErrorContains(t, err, tc.wantIn)
			}
			require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20), "allocated for what was announced")
		})
	}

	// A client cannot send what the resident would refuse.
	c, err := Dial(socket)
	require.NoError(t, err)
	defer c.Close()
	require.ErrorIs(t, c.Send(map[string]string{"code": strings.Repeat("x", MaxRequest)}), ErrTooLarge)
}
