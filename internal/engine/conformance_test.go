package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/hostfuncs"
	"github.com/wasmpy/wasmpy/workspace"
)

// How runs end, the same on every engine: each limit, each way the code
// ends, the streams, the clock, the host calls and the file systems.
func TestOutcomesOnEachEngine(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *Engine) {
		cases := []struct {
			name   string
			run    Run
			kind   string // "" for success
			exit   int
			stdout string
		}{
			{name: "ok", run: Run{Code: "print(6*7)"}, stdout: "42\n"},
			{name: "exception", run: Run{Code: "1/0"}, kind: KindException, exit: 1},
			{name: "syntax", run: Run{Code: "def ("}, kind: KindSyntax, exit: 1},
			{name: "sys.exit", run: Run{Code: "import sys; print('x'); sys.exit(3)"}, kind: KindExit, exit: 3, stdout: "x\n"},
			{name: "os._exit", run: Run{Code: "import os; os._exit(5)"}, kind: KindExit, exit: 5},
			{name: "abort", run: Run{Code: "import os; os.abort()"}, kind: KindExit, exit: 134},
			{name: "recursion", run: Run{Code: "def f(n): return f(n+1)\nf(0)"}, kind: KindException, exit: 1},
			{name: "timeout", run: Run{Code: "while True: pass", Timeout: 300 * time.Millisecond}, kind: KindTimeout, exit: 124},
			{name: "sleep past timeout", run: Run{Code: "import time; time.sleep(30)", Timeout: 300 * time.Millisecond}, kind: KindTimeout, exit: 124},
			{name: "fuel", run: Run{Code: "while True: pass", Fuel: 10_000_000}, kind: KindFuel, exit: 123},
			{name: "memory", run: Run{Code: "b = bytearray(200 << 20)", MemoryLimit: 64 << 20}, kind: KindMemory, exit: 121},
			{name: "memory, growing", run: Run{Code: "l = []\nwhile True: l.append(bytearray(1 << 20))", MemoryLimit: 64 << 20}, kind: KindMemory, exit: 121},
			{name: "output", run: Run{Code: "while True: print('x' * 1000)", OutputLimit: 64 << 10}, kind: KindOutput, exit: 122},
			{name: "stdin", run: Run{Code: "import sys; print(sys.stdin.read().upper())", Stdin: strings.NewReader("abc")}, stdout: "ABC\n"},
			{name: "sleep and clock", run: Run{Code: "import time; t = time.time(); time.sleep(0.05); print(time.time() - t >= 0.05)", Deterministic: true}, stdout: "True\n"},
			{name: "deterministic", run: Run{Code: "import random, time; print(random.random(), time.time())", Deterministic: true},
				stdout: "0.1480821094895508 1704067200.000001\n"},
			{name: "argv", run: Run{Code: "import sys; print(sys.argv)", Args: []string{"a", "b"}}, stdout: "['-c', 'a', 'b']\n"},
			{name: "host call", run: Run{Code: "print(echo(x=[1, 2]))",
				Host: hostfuncs.Table{"echo": func(_ context.Context, args json.RawMessage) (any, error) { return args, nil }}},
				stdout: "{'x': [1, 2]}\n"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				out := runOn(t, e, &c.run)
				if c.kind == "" {
					require.Nil(t, out.Failure, string(out.Stderr))
				} else {
					require.NotNil(t, out.Failure, string(out.Stderr))
					require.Equal(t, c.kind, out.Failure.Kind, "%+v %s", out.Failure, out.Stderr)
				}
				require.Equal(t, c.exit, out.ExitCode)
				if c.stdout != "" || c.kind == "" {
					require.Equal(t, c.stdout, string(out.Stdout))
				}
			})
		}
	})
}

// A run's workspace: files written, read, listed, renamed and removed
// through WASI, the same on every engine; the program at /app read-only.
func TestFilesOnEachEngine(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *Engine) {
		ws, err := workspace.New(workspace.Config{})
		require.NoError(t, err)
		defer ws.Close()
		out := runOn(t, e, &Run{FS: ws.SysFS, Deterministic: true, Code: `
import os, json
os.makedirs("/workspace/d/e", exist_ok=True)
with open("/workspace/d/a.txt", "w") as f:
    f.write("hello")
with open("/workspace/d/a.txt", "a") as f:
    f.write(" world")
print(open("/workspace/d/a.txt").read())
os.rename("/workspace/d/a.txt", "/workspace/d/b.txt")
print(sorted(os.listdir("/workspace/d")), os.path.getsize("/workspace/d/b.txt"))
with open("/workspace/d/b.txt", "rb") as f:
    f.seek(6)
    print(f.read(), f.tell())
os.rmdir("/workspace/d/e")
try:
    open("/workspace/nope")
except FileNotFoundError as e:
    print("FileNotFoundError", e.errno)
print([n for n in os.listdir("/usr/local/lib/python3.13") if n == "os.py"])
try:
    open("/usr/local/lib/python3.13/x.py", "w")
except OSError as e:
    print(type(e).__name__, e.errno)
`})
		require.Nil(t, out.Failure, string(out.Stderr))
		// (errno numbers are WASI's)
		require.Equal(t, "hello world\n['b.txt', 'e'] 11\nb'world' 11\nFileNotFoundError 44\n['os.py']\nOSError 69\n", string(out.Stdout))
		b, ok := ws.OverlayFile("d/b.txt")
		require.True(t, ok)
		require.Equal(t, "hello world", string(b))
	})
}

// The same job spends the same fuel on every engine: fuel is our wasm
// rewriting, not an engine's, and a budget means the same on both.
func TestSameFuelOnEachEngine(t *testing.T) {
	names := Engines()
	if len(names) < 2 {
		t.Skip("one engine in this build: `go test -tags wasmtime` compares wazero's fuel with wasmtime's")
	}
	code := `
import json, re, collections
d = collections.Counter()
for i in range(20000):
    d[str(i % 97)] += i
print(sum(d.values()), json.dumps(sorted(d)[:3]), re.sub(r"\d", "#", "a1b22"))
`
	var first *Outcome
	for _, name := range names {
		out := runOn(t, testEngineOn(t, name, true), &Run{Code: code, Deterministic: true, Fuel: 1 << 40})
		require.Nil(t, out.Failure, string(out.Stderr))
		if first == nil {
			first = out
			continue
		}
		require.Equal(t, first.FuelUsed, out.FuelUsed, "%s's fuel against %s's", name, names[0])
		require.Equal(t, string(first.Stdout), string(out.Stdout))
	}
	// A budget stops both at the same point.
	var stopped []string
	for _, name := range names {
		out := runOn(t, testEngineOn(t, name, true), &Run{Code: countdown, Deterministic: true, Fuel: 30_000_000})
		require.Equal(t, KindFuel, out.Failure.Kind)
		stopped = append(stopped, string(out.Stdout))
	}
	require.Equal(t, stopped[0], stopped[1])
}

// Traps, aborts, exits and stops in many runs at once end those runs and
// nothing else: the host process and the other runs go on.
func TestTrapsUnderConcurrency(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *Engine) {
		codes := map[string]string{
			"abort":     "import os; os.abort()",
			"recursion": "import sys; sys.setrecursionlimit(10**6)\ndef f(n): return f(n+1)\nf(0)",
			"exit":      "import os; os._exit(7)",
			"loop":      "while True: pass",
			"ok":        "print(sum(range(10**5)))",
		}
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for i := range 4 {
			for name, code := range codes {
				wg.Add(1)
				go func() {
					defer wg.Done()
					out, err := e.Run(context.Background(), &Run{Code: code, Timeout: 2 * time.Second})
					if err != nil {
						errs <- fmt.Errorf("%s #%d: %w", name, i, err)
						return
					}
					if name == "ok" && (out.Failure != nil || string(out.Stdout) != "4999950000\n") {
						errs <- fmt.Errorf("ok #%d: %+v %s", i, out.Failure, out.Stderr)
					}
					if name != "ok" && out.Failure == nil {
						errs <- fmt.Errorf("%s #%d succeeded", name, i)
					}
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		out := runOn(t, e, &Run{Code: "print('still here')"})
		require.Equal(t, "still here\n", string(out.Stdout))
	})
}

// Ctrl-C reaches the guest as KeyboardInterrupt on every engine, in
// compute, asleep, and waiting for stdin; its output streams as it runs.
func TestInterruptOnEachEngine(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *Engine) {
		for name, code := range map[string]string{
			"compute": "while True: pass",
			"sleep":   "import time; time.sleep(60)",
			"stdin":   "import sys; sys.stdin.read()",
		} {
			t.Run(name, func(t *testing.T) {
				intr := make(chan struct{}, 1)
				stdinR, stdinW := io.Pipe()
				defer stdinW.Close()
				var streamed strings.Builder
				time.AfterFunc(200*time.Millisecond, func() { intr <- struct{}{} })
				out := runOn(t, e, &Run{Code: "print('started', flush=True)\ntry:\n    " + strings.ReplaceAll(code, "\n", "\n    ") +
					"\nexcept KeyboardInterrupt:\n    print('caught')\n", Interrupt: intr, Stdin: stdinR, Stdout: &streamed, Timeout: 20 * time.Second})
				require.Nil(t, out.Failure, "%+v %s", out.Failure, out.Stderr)
				require.Equal(t, "started\ncaught\n", string(out.Stdout))
				require.Equal(t, "started\ncaught\n", streamed.String())
			})
		}
	})
}

// Output the guest has not flushed streams while it computes, with and
// without a fuel budget: the host has its stdout flushed (under wasmtime
// without a budget, by raising the flush signal in the guest's memory).
func TestStdoutStreamsWhileComputing(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *Engine) {
		for name, budget := range map[string]uint64{"no budget": 0, "budget": 1 << 50} {
			t.Run(name, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				first := make(chan string, 1)
				stdout := writerFunc(func(p []byte) (int, error) {
					select {
					case first <- string(p):
					default:
					}
					return len(p), nil
				})
				done := make(chan *Outcome, 1)
				go func() {
					out, err := e.Run(ctx, &Run{Code: "print('computing')\nwhile True: pass\n", Stdout: stdout, Fuel: budget})
					if err != nil {
						out = &Outcome{Failure: &Failure{Message: err.Error()}}
					}
					done <- out
				}()
				select {
				case s := <-first:
					require.Equal(t, "computing\n", s)
				case <-time.After(time.Minute): // a bound for a hang, not a timing
					t.Fatal("nothing streamed while the guest computed")
				}
				cancel()
				out := <-done
				require.NotNil(t, out.Failure)
				require.Equal(t, KindInterrupted, out.Failure.Kind)
			})
		}
	})
}

// A guest's own SIGINT handler runs on Ctrl-C, and one that ignores
// SIGINT (SIG_IGN, or SIG_DFL, which WASI never delivers) is left alone,
// with nothing on stderr: the host raises it as PyErr_SetInterruptEx does,
// with or without a fuel budget.
func TestInterruptHandlersOnEachEngine(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *Engine) {
		for name, budget := range map[string]uint64{"no budget": 0, "budget": 1 << 50} {
			t.Run(name, func(t *testing.T) {
				interrupt := func() chan struct{} {
					intr := make(chan struct{}, 1)
					time.AfterFunc(200*time.Millisecond, func() { intr <- struct{}{} })
					return intr
				}
				out := runOn(t, e, &Run{Code: "import signal\nhit = []\nsignal.signal(signal.SIGINT, lambda *a: hit.append(1))\n" +
					"while not hit: pass\nprint('handled')\n", Interrupt: interrupt(), Fuel: budget, Timeout: 30 * time.Second})
				require.Nil(t, out.Failure, "%+v %s", out.Failure, out.Stderr)
				require.Equal(t, "handled\n", string(out.Stdout))
				for _, h := range []string{"SIG_IGN", "SIG_DFL"} {
					out = runOn(t, e, &Run{Code: "import signal, time\nsignal.signal(signal.SIGINT, signal." + h + ")\n" +
						"t = time.monotonic()\nwhile time.monotonic() - t < 1: pass\nprint('done')\n", Interrupt: interrupt(), Fuel: budget, Timeout: 30 * time.Second})
					require.Nil(t, out.Failure, "%s: %+v %s", h, out.Failure, out.Stderr)
					require.Equal(t, "done\n", string(out.Stdout), h)
					require.Empty(t, string(out.Stderr), h)
				}
			})
		}
	})
}
