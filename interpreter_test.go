package wasmpy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
)

// The wasmpy build is what the rest of the suite runs on.
func TestWasmpyInterpreter(t *testing.T) {
	sb := newSandbox(t, wasmpy.Config{Interpreter: "wasmpy"})
	info := sb.Interpreter()
	require.Equal(t, "wasmpy", info.Kind)
	require.True(t, strings.HasPrefix(info.Version, "3.13."), info.Version)
	require.Len(t, info.SHA256, 64)

	res := runIn(t, sb, wasmpy.Job{Code: `
import sys, zlib, time
print(sys.version_info[:2], sys.platform)
data = b"wasmpy " * 1000
packed = zlib.compress(data)
print(len(packed) < len(data) // 10, zlib.decompress(packed) == data)
t = time.monotonic(); time.sleep(0.1); print(0.09 < time.monotonic() - t < 1)
print("_wasmpy" in sys.builtin_module_names)
submit_result("via the native module")
`, Grants: []wasmpy.Capability{wasmpy.SubmitResult}})
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "(3, 13) wasi\nTrue True\nTrue\nTrue\n", res.Stdout)
	// The host call arrived through _wasmpy, the interpreter's own import.
	require.Equal(t, `"via the native module"`, string(res.Result))
	require.Equal(t, "submit_result", res.HostCalls[0].Name)
}

// The npm build stays selectable: the same code and limits, no capabilities.
func TestNPMInterpreter(t *testing.T) {
	sb := newSandbox(t, wasmpy.Config{Interpreter: "npm"})
	require.Equal(t, "3.12.0", sb.Interpreter().Version)
	res := runIn(t, sb, wasmpy.Job{Code: "import sys, time\ntime.sleep(0.05)\nprint(sys.version_info[:2], sys.argv[1:])", Args: []string{"x"}})
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "(3, 12) ['x']\n", res.Stdout)
	require.NotZero(t, res.FuelUsed)

	res = runIn(t, sb, wasmpy.Job{Code: "def f():\n    raise KeyError('k')\nf()"})
	require.Equal(t, wasmpy.KindException, res.Error.Kind)
	require.Equal(t, "KeyError", res.Error.Type)
	require.NotContains(t, res.Stderr, "wasmpy-report", "the runner's report leaked into stderr")

	res = runIn(t, sb, wasmpy.Job{Code: "submit_result(1)", Grants: []wasmpy.Capability{wasmpy.SubmitResult}})
	require.Equal(t, "wasmpy.HostError", res.Error.Type)
	require.Contains(t, res.Error.Message, "need the wasmpy interpreter build")

	start := time.Now()
	res = runIn(t, sb, wasmpy.Job{Code: "import time\ntime.sleep(60)", Limits: wasmpy.Limits{Timeout: 300 * time.Millisecond}})
	require.Equal(t, wasmpy.KindTimeout, res.Error.Kind)
	require.Less(t, time.Since(start), 5*time.Second)

	res = runIn(t, sb, wasmpy.Job{Code: "while True: pass", Limits: wasmpy.Limits{Fuel: 200_000_000}})
	require.Equal(t, wasmpy.KindFuel, res.Error.Kind)
	_, err := sb.Run(context.Background(), wasmpy.Job{Code: "pass"})
	require.NoError(t, err)
}
