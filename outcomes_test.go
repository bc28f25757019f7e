package wasmpy_test

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
)

// How a run ended is the host's to say for the limits (memory only when the
// host refused memory), and the guest's report, when it breaks or lies,
// degrades to a sensible kind with the real exit status.
func TestOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name, code string
		memory     uint64
		kind       wasmpy.Kind // "" for success
		exit       int
		typ        string
		message    string // contained in the message
		stdout     string
		stderr     string // contained in stderr
	}{
		{name: "a class of the user's named MemoryError", code: "class MemoryError(Exception): pass\nraise MemoryError('fake')\n",
			kind: wasmpy.KindException, exit: 1, typ: "MemoryError", message: "fake"},
		{name: "raise MemoryError", code: "raise MemoryError\n",
			kind: wasmpy.KindException, exit: 1, typ: "MemoryError"},
		{name: "a forged report claiming a memory error", code: "import _wasmpy, os\n" +
			`_wasmpy.call("_report", '{"status": "exception", "type": "MemoryError", "exit_code": 121}')` + "\nos._exit(1)\n",
			kind: wasmpy.KindException, exit: 1, typ: "MemoryError"},
		{name: "a forged report of success", code: "import _wasmpy, os\n" +
			`_wasmpy.call("_report", '{"status": "ok"}')` + "\nos._exit(7)\n",
			kind: wasmpy.KindExit, exit: 7},
		{name: "a forged report claiming the sandbox crashed", code: "import _wasmpy, os\n" +
			`_wasmpy.call("_report", '{"status": "internal", "exit_code": 120}')` + "\nos._exit(1)\n",
			kind: wasmpy.KindException, exit: 1, message: `unknown status "internal"`},
		{name: "the runner's report rewritten to claim the sandbox crashed", code: "import _wasmpy_runner\n" +
			"_wasmpy_runner._exit_report = lambda e: {'status': 'internal', 'exit_code': 120}\nraise SystemExit(0)\n",
			kind: wasmpy.KindException, exit: 1, message: `unknown status "internal"`},
		{name: "a forged report with a huge message", code: "import _wasmpy, json, os\n" +
			`_wasmpy.call("_report", json.dumps({"status": "exception", "type": "E", "message": "m" * 10**7}))` + "\nos._exit(1)\n",
			kind: wasmpy.KindException, exit: 1, typ: "E", message: "mmm... (cut)"},
		{name: "os._exit(3)", code: "import os\nprint('before')\nos._exit(3)\n",
			kind: wasmpy.KindExit, exit: 3, message: "exit status 3", stdout: "before\n"},
		{name: "os._exit(0)", code: "import os\nprint('done')\nos._exit(0)\n", stdout: "done\n"},
		{name: "an exception whose __str__ raises", code: "class E(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\nraise E()\n",
			kind: wasmpy.KindException, exit: 1, typ: "E", message: "<exception str() failed>", stderr: "E"},
		{name: "stderr set to None", code: "import sys\nsys.stderr = sys.__stderr__ = None\nraise ValueError('lost?')\n",
			kind: wasmpy.KindException, exit: 1, typ: "ValueError", message: "lost?", stderr: "ValueError: lost?"},
		{name: "stderr closed", code: "import sys\nsys.stderr.close()\nraise ValueError('closed')\n",
			kind: wasmpy.KindException, exit: 1, typ: "ValueError", message: "closed", stderr: "ValueError: closed"},
		{name: "sys.exit with a message whose __str__ raises", code: "import sys\nclass M:\n    def __str__(self): raise TypeError\nsys.exit(M())\n",
			kind: wasmpy.KindExit, exit: 1},
		{name: "compile out of memory", code: "x = [" + strings.Repeat("(1,),", 4<<20) + "]\n", memory: 96 << 20,
			kind: wasmpy.KindMemory, exit: 121, typ: "MemoryError"},
		{name: "os.abort()", code: "import os\nprint('before')\nos.abort()\n",
			kind: wasmpy.KindExit, exit: 134, message: "aborted", stdout: "before\n"},
		// WASI has no signals: the libc's emulation aborts.
		{name: "raise_signal(SIGKILL)", code: "import signal\nprint('before')\nsignal.raise_signal(signal.SIGKILL)\n",
			kind: wasmpy.KindExit, exit: 134, message: "aborted", stdout: "before\n", stderr: "Killed"},
		{name: "a MemoryError caught after the limit was hit", code: "try:\n    b = bytearray(1 << 30)\nexcept MemoryError:\n    print('recovered')\n",
			memory: 64 << 20, stdout: "recovered\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, wasmpy.Job{Code: tc.code, Limits: wasmpy.Limits{Memory: tc.memory, Timeout: 30 * time.Second}})
			require.Equal(t, tc.exit, res.ExitCode, "error: %+v\nstderr: %s", res.Error, res.Stderr)
			if tc.kind == "" {
				require.Nil(t, res.Error, "stderr: %s", res.Stderr)
			} else {
				require.NotNil(t, res.Error)
				require.Equal(t, tc.kind, res.Error.Kind, "error: %+v\nstderr: %s", res.Error, res.Stderr)
				require.Equal(t, tc.typ, res.Error.Type)
				require.Contains(t, res.Error.Message, tc.message)
				require.NotContains(t, res.Error.Message, "wasm stack")
				require.NotContains(t, res.Error.Message, "\n")
			}
			require.Equal(t, tc.stdout, res.Stdout)
			require.Contains(t, res.Stderr, tc.stderr)
		})
	}
}

// What the script wrote before the run was stopped is in the Result, the
// partial line included: stderr is unbuffered, and stdout flushed first.
func TestOutputBeforeAStop(t *testing.T) {
	const wrote = "import sys\nprint('line')\nsys.stdout.write('partial')\nsys.stderr.write('err-partial')\n"
	for name, tc := range map[string]struct {
		code   string
		limits wasmpy.Limits
		kind   wasmpy.Kind
	}{
		"timeout": {wrote + "while True: pass\n", wasmpy.Limits{Timeout: 300 * time.Millisecond}, wasmpy.KindTimeout},
		"fuel":    {wrote + "while True: pass\n", wasmpy.Limits{Fuel: 100_000_000}, wasmpy.KindFuel},
		"memory":  {wrote + "xs = []\nwhile True: xs.append(bytearray(1 << 20))\n", wasmpy.Limits{Memory: 64 << 20}, wasmpy.KindMemory},
		"output":  {wrote + "while True: sys.stderr.write('e' * 1000)\n", wasmpy.Limits{Output: 100_000}, wasmpy.KindOutput},
	} {
		t.Run(name, func(t *testing.T) {
			res := run(t, wasmpy.Job{Code: tc.code, Limits: tc.limits})
			require.NotNil(t, res.Error)
			require.Equal(t, tc.kind, res.Error.Kind)
			require.Equal(t, "line\npartial", res.Stdout)
			require.True(t, strings.HasPrefix(res.Stderr, "err-partial"), "stderr: %q", res.Stderr)
		})
	}
}

// Job.Stdout and Job.Stderr see every write as it happens, in order, past
// the output cap, while the Result keeps its capped copy.
func TestStreams(t *testing.T) {
	first := make(chan string, 1)
	stdout := writerFunc(func(p []byte) (int, error) {
		select {
		case first <- string(p):
		default:
		}
		return len(p), nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := testSandbox(t).Run(ctx, wasmpy.Job{Code: "import time\nprint('one')\ntime.sleep(30)\n", Stdout: stdout})
		done <- err
	}()
	// The first write arrives while the script still runs (the runner
	// flushes stdout before a sleep), the line whole.
	select {
	case got := <-first:
		require.Equal(t, "one\n", got)
	case err := <-done:
		t.Fatalf("the run ended (%v) before its first write was streamed", err)
	}
	cancel()
	<-done

	var both syncBuffer
	res := run(t, wasmpy.Job{Code: "import sys\nfor i in range(3):\n    print(i)\n    sys.stderr.write('e%d\\n' % i)\nprint('x' * 5000)\n",
		Stdout: &both, Stderr: &both, Limits: wasmpy.Limits{Output: 1000}})
	require.Equal(t, wasmpy.KindOutput, res.Error.Kind)
	require.Len(t, res.Stdout, 1000)
	// A limit the caller sets binds the stream too: it carries what the
	// capture kept, in order, and the run stops there.
	require.Equal(t, "0\ne0\n1\ne1\n2\ne2\n"+strings.Repeat("x", 1000-6), both.String())
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// syncBuffer is a bytes.Buffer safe for a run's goroutine and the test's.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Source that is not valid UTF-8 is a SyntaxError, as CPython makes it;
// a coding line makes it valid, as in CPython.
func TestSourceEncoding(t *testing.T) {
	res := run(t, wasmpy.Job{Code: "x = '\xe9t\xe9'\nprint(x)\n"})
	require.NotNil(t, res.Error)
	require.Equal(t, wasmpy.KindSyntax, res.Error.Kind, "stdout: %q", res.Stdout)
	require.Equal(t, "SyntaxError", res.Error.Type)
	require.Empty(t, res.Stdout)

	res = run(t, wasmpy.Job{Code: "# -*- coding: latin-1 -*-\nprint('\xe9t\xe9')\n"})
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "été\n", res.Stdout)

	res = run(t, wasmpy.Job{Code: "\ufeffprint('bom')\n"})
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "bom\n", res.Stdout)
}

// The host keeps no copy of a script: the source goes from the caller's
// string straight into guest memory, so a run's host memory is its guest
// memory plus a small constant (see BenchmarkRunRSS), not a multiple of the
// script's size.
func TestHostCopiesNoSource(t *testing.T) {
	code := strings.Repeat("# "+strings.Repeat("a", 1000)+"\n", 20<<10) + "print('ran')\n"
	testSandbox(t)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res := run(t, wasmpy.Job{Code: code})
	runtime.ReadMemStats(&after)
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "ran\n", res.Stdout)
	allocated := after.TotalAlloc - before.TotalAlloc
	require.Less(t, allocated, uint64(len(code)/4), "the host allocated %d MiB for a %d MiB script", allocated>>20, len(code)>>20)
}

// A Job.Stdout that blocks holds up the script writing to it, never the
// run's outcome past its deadline.
func TestBlockedStream(t *testing.T) {
	unblock := make(chan struct{})
	defer close(unblock)
	blocked := writerFunc(func(p []byte) (int, error) {
		<-unblock
		return len(p), nil
	})
	done := make(chan *wasmpy.Result, 1)
	go func() {
		res, _ := testSandbox(t).Run(context.Background(), wasmpy.Job{Code: "print('stuck')\n", Stdout: blocked,
			Limits: wasmpy.Limits{Timeout: 300 * time.Millisecond}})
		done <- res
	}()
	select {
	case res := <-done:
		require.NotNil(t, res)
		require.Equal(t, wasmpy.KindTimeout, res.Error.Kind)
	case <-time.After(20 * time.Second):
		t.Fatal("the run waited for its blocked stream past its deadline")
	}
}

// What the script printed just before a stop is kept, though stdout is
// buffered: the instance flushes it in one last slice of fuel, which the
// fuel used does not count.
func TestOutputJustBeforeAStop(t *testing.T) {
	const fuel = 3 << 18 // fewer slices than between periodic flushes
	res := run(t, wasmpy.Job{Code: "print('last words')\nwhile True: pass\n", Limits: wasmpy.Limits{Fuel: fuel}})
	require.NotNil(t, res.Error)
	require.Equal(t, wasmpy.KindFuel, res.Error.Kind)
	require.Equal(t, uint64(fuel), res.FuelUsed)
	require.Equal(t, "last words\n", res.Stdout)
}
