package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
)

// A turn that rebinds what starts the next turn's runner: the next turn
// still ends at its --timeout, and SIGTERM still stops it (issue 25, item
// 1: both hung, the process deaf to SIGTERM, in every tier).
func TestExecSessionLeftoversKeepLimits(t *testing.T) {
	bin := wasmpyBinary(t)
	path := filepath.Join(t.TempDir(), "poisoned.session")
	code, _, errOut := wasmpyCLI(t, "", "exec", "--session", path, "-c",
		"def __import__(*a):\n    while True: pass\n"+
			"def _spin(*a):\n    while True: pass\n"+
			"import _wasmpy_runner as r\nr._entry_main.__dict__['_wasmpy_entry'] = _spin\n")
	require.Equal(t, 0, code, errOut)

	start := time.Now()
	cmd := exec.Command(bin, "exec", "--resident=false", "--session", path, "--timeout", "3s", "-c", "1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	done := make(chan error, 1)
	require.NoError(t, cmd.Start())
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.Equal(t, 124, processStatus(err), stderr.String())
		require.Contains(t, stderr.String(), "timed out after 3s")
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("exec --timeout 3s still ran after %v", time.Since(start))
	}

	// No timeout: SIGTERM ends it, as it ends python3.
	cmd = exec.Command(bin, "exec", "--resident=false", "--session", path, "-c", "1")
	stderr.Reset()
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	go func() { done <- cmd.Wait() }()
	time.Sleep(2 * time.Second)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-done:
		require.Equal(t, console.ExitSIGTERM, processStatus(err), stderr.String())
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("SIGTERM did not stop a turn started from a poisoned session")
	}
}

func processStatus(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}
