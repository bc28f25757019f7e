package resident

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The server answers what asks for no run, says why it will not run a
// malformed request, and retires (freeing the socket for the client's own
// resident) when a client of another binary comes.
func TestServerRequests(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peer credentials are checked on Linux only; elsewhere there is no resident")
	}
	dir, err := os.MkdirTemp("", "wr")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket, lock := Paths(dir, "/bin/wasmpy")
	ln, err := Listen(socket, lock)
	require.NoError(t, err)
	s := NewServer(ln, "build-1", time.Minute)
	served := make(chan struct{})
	go func() {
		s.Serve()
		close(served)
	}()
	ask := func(req Request) Reply {
		t.Helper()
		c, err := Dial(socket)
		require.NoError(t, err)
		defer c.Close()
		require.NoError(t, c.Send(req))
		var rep Reply
		_, err = c.Recv(&rep)
		require.NoError(t, err)
		return rep
	}

	rep := ask(Request{Binary: "build-1", Op: "status"})
	require.NotNil(t, rep.Status)
	require.Equal(t, os.Getpid(), rep.Status.PID)
	require.Equal(t, Status{PID: os.Getpid(), Started: rep.Status.Started, Idle: time.Minute}, *rep.Status, "no runs, none active, nothing loaded")

	require.Equal(t, `unknown request "dance"`, ask(Request{Binary: "build-1", Op: "dance"}).Fallback)
	require.Equal(t, "a run without its job or its three streams", ask(Request{Binary: "build-1", Op: "run"}).Fallback)

	require.Equal(t, FallbackStale, ask(Request{Binary: "build-2", Op: "status"}).Fallback)
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("a stale resident kept serving")
	}
	_, err = Dial(socket)
	require.ErrorIs(t, err, ErrNotRunning, "the socket is free for the client's own resident")
}
