//go:build unix

package service_test

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
)

// A turn that rebinds what starts the session's next turn leaves no
// instance running once it ends, and the next turn ends at the service's
// limit instead of hanging with the session's lock held (issue 25, item 1).
func TestSessionPoisonedTurnStaysBounded(t *testing.T) {
	db := filepath.Join(t.TempDir(), "provenance.db")
	s, stop := sessionServer(t, db, wasmpy.SessionLimits{})
	defer stop()
	alice := []string{"Authorization", "Bearer alice"}
	r := s.do(t, "POST", "/sessions", "", alice...)
	require.Equal(t, 201, r.status, r.raw)
	id := r.body["session_id"].(string)
	r = s.do(t, "POST", "/sessions/"+id+"/exec", `{"code": "def _spin(*a):\n    while True: pass\nimport _wasmpy_runner as r\nr._entry_main.__dict__['_wasmpy_entry'] = _spin\n"}`, alice...)
	require.Equal(t, 200, r.status, r.raw)

	// Idle after the turn: nothing of the session runs (the CPU time of the
	// process grows by what the idle runtime costs, not by a spinning core).
	before := cpuTime(t)
	time.Sleep(time.Second)
	require.Less(t, cpuTime(t)-before, 500*time.Millisecond, "an instance runs while the session is idle")

	for range 2 { // the lock is released: the second turn is not stuck behind the first
		done := make(chan reply, 1)
		go func() {
			done <- s.do(t, "POST", "/sessions/"+id+"/exec", `{"code": "print(1)", "limits": {"timeout_ms": 1500}}`, alice...)
		}()
		select {
		case r = <-done:
			require.Equal(t, 504, r.status, r.raw)
			require.Equal(t, "timeout", r.errorCode(), r.raw)
		case <-time.After(time.Minute):
			t.Fatal("the session's next turn hangs past its timeout")
		}
	}
	r = s.do(t, "DELETE", "/sessions/"+id, "", alice...)
	require.Equal(t, 204, r.status, r.raw)
	before = cpuTime(t)
	time.Sleep(time.Second)
	require.Less(t, cpuTime(t)-before, 500*time.Millisecond, "an instance runs after the session was deleted")
}

// cpuTime is the CPU time the test process has used so far.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
