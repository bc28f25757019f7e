package wasmpy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
)

// The core build is what the rest of the suite runs on.
func TestCoreInterpreter(t *testing.T) {
	sb := newSandbox(t, wasmpy.Config{Interpreter: "core"})
	info := sb.Interpreter()
	require.Equal(t, "core", info.Kind)
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
	require.Equal(t, `"via the native module"`, string(res.Output))
	require.Equal(t, "submit_result", res.HostCalls[0].Name)
}

// "wasmpy", the core build's former name, still selects it: a Config, a
// flag or an environment that says so keeps working, and reports "core".
func TestInterpreterFormerName(t *testing.T) {
	old := newSandbox(t, wasmpy.Config{Interpreter: "wasmpy"})
	core := newSandbox(t, wasmpy.Config{Interpreter: "core"})
	require.Equal(t, core.Interpreter(), old.Interpreter())
	require.Equal(t, "core", old.Interpreter().Kind)
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
	require.Contains(t, res.Error.Message, "need the core interpreter build")

	start := time.Now()
	res = runIn(t, sb, wasmpy.Job{Code: "import time\ntime.sleep(60)", Limits: wasmpy.Limits{Timeout: 300 * time.Millisecond}})
	require.Equal(t, wasmpy.KindTimeout, res.Error.Kind)
	require.Less(t, time.Since(start), 5*time.Second)

	res = runIn(t, sb, wasmpy.Job{Code: "while True: pass", Limits: wasmpy.Limits{Fuel: 200_000_000}})
	require.Equal(t, wasmpy.KindFuel, res.Error.Kind)
	_, err := sb.Run(context.Background(), wasmpy.Job{Code: "pass"})
	require.NoError(t, err)
}

// Our patches to CPython (assets/build/patches) keep their fixes: each case
// failed on the unpatched build. The costly cases are bounded by fuel, a
// deterministic budget several times what the fix needs and a fraction of
// what the old code used, so a regression fails whatever the machine's speed.
func TestCPythonPatches(t *testing.T) {
	sb := newSandbox(t, wasmpy.Config{Interpreter: "core"})
	cases := []struct {
		name string
		code string
		fuel uint64
		want string
	}{{
		// 0001: the running total stays in C past 2**31: 91 million units,
		// against 203 million when each item past it made an int object.
		name: "sum of ints is 64-bit",
		code: `print(sum(range(10**6)), sum([2**40, 1, -5]), sum([0.5, 2**40, 3]), sum([2**63 - 1, 1]), sum([-2**63, -1]))`,
		fuel: 140_000_000,
		want: "499999500000 1099511627772 1099511627779.5 9223372036854775808 -9223372036854775809\n",
	}, {
		// 0002: 20,000 replacement fields: 0.3 billion units; the quadratic
		// copy took 17 billion.
		name: "f-string with many fields is linear",
		code: `
src = "f'" + "".join("{x%d}" % (i % 10) for i in range(20000)) + "'"
v = eval(src, {"x%d" % i: i for i in range(10)})
print(len(src), len(v), v[:12], v[-3:])`,
		fuel: 2_000_000_000,
		want: "80003 20000 012345678901 789\n",
	}, {
		// 0002 keeps the text of f"{expr=}", which it now copies at the end of
		// the expression: conversions, format specs, nesting, comments and
		// lines inside the braces.
		name: "f-string debug expressions",
		code: "a, b = 1, 's'\n" +
			"print(f\"{a=} {b=!r:>5} {a + 1 = } {f'{a=}'} {a=:{b!s}>3}|{'x' 'y'=}\")\n" +
			"print(f'''{a # a comment\n=}''')\n" +
			"print(f'''{a\n + 1\n=}''')\n",
		want: "a=1 b=  's' a + 1 = 2 a=1 a=ss1|'x' 'y'='xy'\na \n=1\na\n + 1\n=2\n",
	}, {
		// 0003: the sign of an fma that underflows to zero (was 0.0).
		name: "fma signed zero",
		code: `
import math
tiny = 1e-300
print([math.copysign(1, math.fma(x, y, z)) for x, y, z in [
    (tiny, -tiny, 0.0), (-tiny, tiny, 0.0), (tiny, tiny, 0.0), (tiny, -tiny, -0.0),
    (0.0, -2.0, 0.0), (-0.0, 2.0, -0.0), (2.0, -2.0, 4.0), (-2.0, -2.0, -4.0)]])
x, y, z = float.fromhex('0x1p-500'), float.fromhex('0x1p-550'), float.fromhex('0x1p-1000')
print(math.fma(x - y, x + y, -z), math.fma(y - x, x + y, z), math.fma(2.0, 3.0, 1.0))`,
		want: "[-1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, 1.0]\n-0.0 0.0 7.0\n",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := runIn(t, sb, wasmpy.Job{Code: c.code, Limits: wasmpy.Limits{Fuel: c.fuel, Timeout: 5 * time.Minute}})
			require.Nil(t, res.Error, res.Stderr)
			require.Equal(t, c.want, res.Stdout)
		})
	}
}
