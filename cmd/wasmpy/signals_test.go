package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A signal while the sandbox loads still gets --json its one object, of
// kind interrupted. The interpreter is a FIFO nobody writes to, so the load
// waits until the test has signalled: no race with a fast machine.
func TestSignalWhileLoading(t *testing.T) {
	for _, tc := range []struct {
		sig    syscall.Signal
		status int
	}{{syscall.SIGINT, exitSIGINT}, {syscall.SIGTERM, exitSIGTERM}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "python.wasm")
			require.NoError(t, syscall.Mkfifo(fifo, 0o600))
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(wasmpyBinary(t), "exec", "--interpreter", fifo, "--json", "-c", "print(1)")
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { cmd.Process.Kill() })
			// Once the FIFO has a reader, wasmpy is loading (and catches
			// signals: it does before it loads).
			var w *os.File
			deadline := time.Now().Add(waitLimit)
			for {
				var err error
				if w, err = os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					break
				}
				require.True(t, time.Now().Before(deadline), "wasmpy never opened its interpreter")
				time.Sleep(10 * time.Millisecond)
			}
			defer w.Close()
			require.NoError(t, cmd.Process.Signal(tc.sig))
			err := cmd.Wait()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "stderr: %s", stderr.String())
			require.Equal(t, tc.status, exit.ExitCode(), "stderr: %s", stderr.String())
			var res struct {
				ExitCode int `json:"exit_code"`
				Error    struct {
					Kind    string `json:"kind"`
					Message string `json:"message"`
				} `json:"error"`
				HostCalls []any `json:"host_calls"`
			}
			require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), "stdout: %q", stdout.String())
			require.Equal(t, tc.status, res.ExitCode)
			require.Equal(t, "interrupted", res.Error.Kind)
			require.Equal(t, "interrupted while the sandbox was loading", res.Error.Message)
			require.NotNil(t, res.HostCalls)
		})
	}
}
