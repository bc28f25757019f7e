package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
)

// A signal while the sandbox loads still gets --json its one object, of
// kind interrupted. The load makes the snapshot image of a package set
// whose preloaded module spins (bounded: the image's own timeout), so it
// lasts until the test has signalled: no race with a fast machine. (A FIFO
// as the interpreter, which this test used, is now refused before it is
// opened.)
func TestSignalWhileLoading(t *testing.T) {
	src := filepath.Join(t.TempDir(), "spinner")
	require.NoError(t, os.MkdirAll(src, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "spinforever.py"), []byte("while True: pass\n"), 0o644))
	set := filepath.Join(t.TempDir(), "spin.zip")
	code, _, errOut := wasmpyCLI(t, "", "pkg", "build", "--out", set, src)
	require.Equal(t, 0, code, errOut)
	for _, tc := range []struct {
		sig    syscall.Signal
		status int
	}{{syscall.SIGINT, console.ExitSIGINT}, {syscall.SIGTERM, console.ExitSIGTERM}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(wasmpyBinary(t), "exec", "--resident=false", "--packages", set, "--preload", "spinforever", "--json", "-c", "print(1)")
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { cmd.Process.Kill() })
			// Once it has spent CPU time, wasmpy is loading (and catches
			// signals: it does before it loads).
			deadline := time.Now().Add(waitLimit)
			for cpuTicks(t, cmd.Process.Pid) < 30 {
				require.True(t, time.Now().Before(deadline), "wasmpy never started loading")
				time.Sleep(10 * time.Millisecond)
			}
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

// cpuTicks is the CPU time (user + system, in clock ticks) process pid has used.
func cpuTicks(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	// The fields after the command (which may hold spaces) start after ')'.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return utime + stime
}
