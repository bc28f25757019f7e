package wasmpy_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/internal/testing/sandboxtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/scripts")

// The tests run against the interpreter `make` installed (WASMPY_INTERPRETER
// overrides it); one sandbox serves them all, as it would a real program.
func testSandbox(t testing.TB) *wasmpy.Sandbox { return sandboxtest.Shared(t) }

func run(t testing.TB, job wasmpy.Job) *wasmpy.Result {
	t.Helper()
	res, err := testSandbox(t).Run(context.Background(), job)
	require.NoError(t, err)
	return res
}

// golden is what a fixture's run must give.
type golden struct {
	ExitCode  int         `json:"exit_code"`
	Stdout    string      `json:"stdout"`
	ErrorKind wasmpy.Kind `json:"error_kind,omitempty"`
	ErrorType string      `json:"error_type,omitempty"`
}

// TestScripts runs every testdata/scripts/*.py and compares with its .golden.
func TestScripts(t *testing.T) {
	t.Setenv("WASMPY_TEST_SECRET", "hunter2") // escape_env.py must not see it
	scripts, err := filepath.Glob("testdata/scripts/*.py")
	require.NoError(t, err)
	require.NotEmpty(t, scripts)
	for _, path := range scripts {
		name := strings.TrimSuffix(filepath.Base(path), ".py")
		t.Run(name, func(t *testing.T) {
			code, err := os.ReadFile(path)
			require.NoError(t, err)
			job := wasmpy.Job{Code: string(code), Filename: filepath.Base(path), Args: []string{"one", "two"},
				Limits: wasmpy.Limits{Memory: 64 << 20}}
			if name == "stdin" {
				job.Stdin = strings.NewReader("from the host")
			}
			res := run(t, job)
			got := golden{ExitCode: res.ExitCode, Stdout: res.Stdout}
			if res.Error != nil {
				got.ErrorKind, got.ErrorType = res.Error.Kind, res.Error.Type
			}
			file := strings.TrimSuffix(path, ".py") + ".golden"
			if *update {
				b, _ := json.MarshalIndent(got, "", "  ")
				require.NoError(t, os.WriteFile(file, append(b, '\n'), 0o644))
				return
			}
			b, err := os.ReadFile(file)
			require.NoError(t, err, "no golden file: run go test -run TestScripts -update")
			var want golden
			require.NoError(t, json.Unmarshal(b, &want))
			require.Equal(t, want, got, "stderr: %s", res.Stderr)
		})
	}
}

func TestErrorReports(t *testing.T) {
	res := run(t, wasmpy.Job{Code: "def f(x):\n    return 1 / x\nf(0)\n", Filename: "div.py"})
	require.Equal(t, 1, res.ExitCode)
	require.Equal(t, wasmpy.KindException, res.Error.Kind)
	require.Equal(t, "ZeroDivisionError", res.Error.Type)
	require.Equal(t, "division by zero", res.Error.Message)
	require.Contains(t, res.Error.Traceback, `File "div.py", line 2, in f`)
	require.NotContains(t, res.Error.Traceback, "wasmpy-runner", "runner frames leak into the traceback")
	require.Contains(t, res.Stderr, "ZeroDivisionError: division by zero")

	res = run(t, wasmpy.Job{Code: "x = 1\ny = (\n"})
	require.Equal(t, wasmpy.KindSyntax, res.Error.Kind)
	require.Equal(t, "SyntaxError", res.Error.Type)
	require.Equal(t, 2, res.Error.Line)

	res = run(t, wasmpy.Job{Code: "class Oops(Exception): pass\nraise Oops('custom')\n"})
	require.Equal(t, "Oops", res.Error.Type)
	require.Equal(t, "custom", res.Error.Message)

	res = run(t, wasmpy.Job{Code: "import sys\nprint('bye')\nsys.exit('fatal: reason')\n"})
	require.Equal(t, wasmpy.KindExit, res.Error.Kind)
	require.Equal(t, 1, res.ExitCode)
	require.Equal(t, "bye\n", res.Stdout)
	require.Contains(t, res.Stderr, "fatal: reason")

	res = run(t, wasmpy.Job{Code: "import sys\nsys.exit(0)\n"})
	require.Nil(t, res.Error)
}

func TestResultJSON(t *testing.T) {
	res := run(t, wasmpy.Job{Code: "print('hi')"})
	b, err := json.Marshal(res)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	for _, key := range []string{"exit_code", "stdout", "stderr", "stdout_truncated", "stderr_truncated",
		"output", "error", "duration_ms", "memory_peak_bytes", "fuel_used", "host_calls"} {
		require.Contains(t, m, key)
	}
	require.Nil(t, m["output"])
	require.Nil(t, m["error"])
	require.Equal(t, "hi\n", m["stdout"])
	require.Greater(t, m["memory_peak_bytes"].(float64), float64(1<<20))
}

// The JSON form of a Result is shared by exec --json, the service and
// provenance: its keys, and those of its error and host calls, stay put.
func TestResultJSONShape(t *testing.T) {
	res := run(t, wasmpy.Job{Grants: []wasmpy.Capability{wasmpy.ReadFile}, Code: "try:\n    read_file('nope')\nexcept OSError:\n    pass\n1/0"})
	b, err := json.Marshal(res)
	require.NoError(t, err)
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &m))
	keys := func(raw json.RawMessage) []string {
		var o map[string]any
		require.NoError(t, json.Unmarshal(raw, &o))
		return slices.Sorted(maps.Keys(o))
	}
	require.Equal(t, []string{"duration_ms", "engine", "error", "exit_code", "files", "fuel_used", "host_calls", "host_calls_total",
		"llm", "memory_peak_bytes", "output", "packages", "queued_ms", "stderr", "stderr_truncated", "stdout", "stdout_truncated", "tier"}, keys(b))
	require.Equal(t, []string{"kind", "message", "traceback", "type"}, keys(m["error"]))
	var calls []json.RawMessage
	require.NoError(t, json.Unmarshal(m["host_calls"], &calls))
	require.Len(t, calls, 1)
	require.Equal(t, []string{"duration_ms", "error", "name", "ok"}, keys(calls[0]))
	require.Contains(t, string(m["error"]), `"kind":"exception"`)
	require.Contains(t, string(calls[0]), `"error":"FileNotFoundError"`)
}

func TestTimeout(t *testing.T) {
	for name, code := range map[string]string{
		"busy loop": "while True:\n    pass\n",
		"sleep":     "import time\ntime.sleep(60)\n",
		// The stop is a trap in the interpreter's own code: C loops reach
		// it, and Python cannot catch it.
		"C loop":   "sum(range(10**15))\n",
		"catching": "while True:\n    try:\n        while True: pass\n    except BaseException:\n        pass\n",
	} {
		t.Run(name, func(t *testing.T) {
			limit := 500 * time.Millisecond
			start := time.Now()
			res := run(t, wasmpy.Job{Code: code, Limits: wasmpy.Limits{Timeout: limit}})
			took := time.Since(start)
			require.Equal(t, wasmpy.KindTimeout, res.Error.Kind)
			require.Equal(t, 124, res.ExitCode)
			// Generous for a loaded machine: the point is that 60 s never happen.
			require.Less(t, took, limit+5*time.Second)
			t.Logf("overshoot %v", took-limit)
		})
	}
}

// Wasm code cannot be preempted: a guest that never calls out would hold up
// every stop-the-world of the host's garbage collector, had the engine no
// preemption point (the refuel call) inside its loops.
func TestBusyGuestLetsGCRun(t *testing.T) {
	sb := testSandbox(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = sb.Run(ctx, wasmpy.Job{Code: "while True: pass", Limits: wasmpy.Limits{Timeout: 20 * time.Second}})
	}()
	time.Sleep(300 * time.Millisecond) // the guest is spinning
	runtime.GC()
	select {
	case <-done:
		t.Fatal("the run ended before the collection: nothing was tested")
	default:
	}
	cancel()
	<-done
}

func TestMemoryLimit(t *testing.T) {
	for name, code := range map[string]string{
		"one big allocation": "b = bytearray(1 << 30)\n",
		"growing list":       "xs = []\nwhile True:\n    xs.append('x' * 4096)\n",
	} {
		t.Run(name, func(t *testing.T) {
			limit := uint64(64 << 20)
			res := run(t, wasmpy.Job{Code: code, Limits: wasmpy.Limits{Memory: limit, Timeout: 20 * time.Second}})
			require.NotNil(t, res.Error)
			require.Equal(t, wasmpy.KindMemory, res.Error.Kind, "stderr: %s", res.Stderr)
			require.Equal(t, 121, res.ExitCode)
			require.LessOrEqual(t, res.MemoryPeakBytes, limit)
		})
	}
	// The host keeps nothing of the failed runs.
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	require.Less(t, ms.HeapAlloc, uint64(512<<20))
}

func TestOutputLimit(t *testing.T) {
	res := run(t, wasmpy.Job{Code: "while True:\n    print('x' * 1000)\n", Limits: wasmpy.Limits{Output: 64 << 10}})
	require.Equal(t, wasmpy.KindOutput, res.Error.Kind)
	require.Equal(t, 122, res.ExitCode)
	require.True(t, res.StdoutTruncated)
	require.Len(t, res.Stdout, 64<<10)

	res = run(t, wasmpy.Job{Code: "import sys\nwhile True:\n    sys.stderr.write('e' * 5000)\n", Limits: wasmpy.Limits{Output: 10000}})
	require.Equal(t, wasmpy.KindOutput, res.Error.Kind)
	require.True(t, res.StderrTruncated)
	require.False(t, res.StdoutTruncated)
}

func TestFreshInstancePerRun(t *testing.T) {
	sb := testSandbox(t)
	ctx := context.Background()
	first, err := sb.Run(ctx, wasmpy.Job{Code: `
import builtins, json, sys
LEAK = 1
builtins.len = lambda x: 42
json.dumps = None
sys.modules["leaky"] = object()
print("changed")
`})
	require.NoError(t, err)
	require.Nil(t, first.Error, first.Stderr)
	second, err := sb.Run(ctx, wasmpy.Job{Code: `
import json, sys
print("LEAK" in globals(), len("ab"), json.dumps([1]), "leaky" in sys.modules)
`})
	require.NoError(t, err)
	require.Equal(t, "False 2 [1] False\n", second.Stdout, second.Stderr)
}

func TestRandomDiffersBetweenRuns(t *testing.T) {
	code := "import random, os\nprint(random.random(), os.urandom(8).hex())"
	a, b := run(t, wasmpy.Job{Code: code}), run(t, wasmpy.Job{Code: code})
	require.Nil(t, a.Error, a.Stderr)
	require.NotEqual(t, a.Stdout, b.Stdout)
}

func TestClock(t *testing.T) {
	res := run(t, wasmpy.Job{Code: "import time\nprint(int(time.time()))"})
	var guest int64
	_, err := fmt.Sscan(res.Stdout, &guest)
	require.NoError(t, err)
	require.InDelta(t, time.Now().Unix(), guest, 60)
}

func TestConcurrentRuns(t *testing.T) {
	sb := testSandbox(t)
	var wg sync.WaitGroup
	results := make([]*wasmpy.Result, 6)
	errs := make([]error, len(results))
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = sb.Run(context.Background(), wasmpy.Job{
				Code: fmt.Sprintf("import sys\nN = %d\nprint(sum(range(N * 1000)), sys.argv[1])", i), Args: []string{fmt.Sprint(i)}})
		}()
	}
	wg.Wait()
	for i, res := range results {
		require.NoError(t, errs[i])
		n := i * 1000
		require.Equal(t, fmt.Sprintf("%d %d\n", n*(n-1)/2, i), res.Stdout)
	}
}

func TestBadJobs(t *testing.T) {
	sb := testSandbox(t)
	_, err := sb.Run(context.Background(), wasmpy.Job{})
	require.ErrorIs(t, err, wasmpy.ErrNoCode)
	_, err = sb.Run(context.Background(), wasmpy.Job{Code: "pass", Limits: wasmpy.Limits{Timeout: -time.Second}})
	require.ErrorContains(t, err, "negative timeout")
	// Limits past what the runtime counts are the caller's error, named.
	_, err = sb.Run(context.Background(), wasmpy.Job{Code: "pass", Limits: wasmpy.Limits{Fuel: 1<<64 - 1}})
	require.EqualError(t, err, "wasmpy: fuel limit 18446744073709551615 exceeds 9223372036854775807")
	_, err = sb.Run(context.Background(), wasmpy.Job{Code: "pass", Limits: wasmpy.Limits{Memory: wasmpy.MaxMemory + 1}})
	require.EqualError(t, err, "wasmpy: memory limit 4294967297 exceeds 4294967296 (the wasm32 address space)")
	require.NoError(t, wasmpy.Limits{Memory: wasmpy.MaxMemory, Fuel: wasmpy.MaxFuel}.Validate())
	// A NUL byte in the source is the script's error, not the host's.
	res := run(t, wasmpy.Job{Code: "print(1)\x00"})
	require.Equal(t, wasmpy.KindSyntax, res.Error.Kind)
}

func TestCorruptInterpreter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "interpreters", "npm-3.12.0", "python.wasm")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte("\x00asm not really"), 0o644))
	_, err := wasmpy.New(context.Background(), wasmpy.Config{Interpreter: "npm", CacheDir: dir})
	require.ErrorContains(t, err, "corrupt")

	_, err = wasmpy.New(context.Background(), wasmpy.Config{Interpreter: filepath.Join(dir, "missing.wasm")})
	require.ErrorContains(t, err, "no such file")

	_, err = wasmpy.New(context.Background(), wasmpy.Config{Interpreter: "npm", CacheDir: t.TempDir()})
	require.ErrorContains(t, err, "not installed")
}
