package wasmpy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
)

// lineWriter hands each line the run writes to a channel as it comes.
type lineWriter struct {
	mu    sync.Mutex
	buf   strings.Builder
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		s := w.buf.String()
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.lines <- s[:i]
		w.buf.Reset()
		w.buf.WriteString(s[i+1:])
	}
}

// startRun runs job in the background; the result arrives on the channel.
func startRun(t *testing.T, ctx context.Context, job wasmpy.Job) <-chan *wasmpy.Result {
	done := make(chan *wasmpy.Result, 1)
	go func() {
		res, err := testSandbox(t).Run(ctx, job)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	return done
}

// The first line reaches the writer while the run still waits for the
// stdin line that lets it end: output streams, and so does stdin.
func TestStreamsBothWays(t *testing.T) {
	stdinR, stdinW := io.Pipe()
	out := &lineWriter{lines: make(chan string, 10)}
	done := startRun(t, context.Background(), wasmpy.Job{
		Code:   "import sys\nprint('first', flush=True)\nprint('got', input(), flush=True)\nprint('err', file=sys.stderr)",
		Stdin:  stdinR,
		Stdout: out, Stderr: out,
	})
	require.Equal(t, "first", <-out.lines)
	_, err := io.WriteString(stdinW, "reply\n")
	require.NoError(t, err)
	res := <-done
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "got reply", <-out.lines)
	require.Equal(t, "err", <-out.lines)
	require.Equal(t, "first\ngot reply\n", res.Stdout, "the Result keeps a copy")
}

// A streamed run has no output limit by default; its capture is capped.
func TestStreamHasNoCap(t *testing.T) {
	var n countWriter
	res := run(t, wasmpy.Job{Code: "import sys\nfor _ in range(6): sys.stdout.write('x' * (1 << 20))", Stdout: &n})
	require.Nil(t, res.Error)
	require.Equal(t, int64(6<<20), int64(n))
	require.Len(t, res.Stdout, 4<<20)
	require.True(t, res.StdoutTruncated)
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

func TestInterrupt(t *testing.T) {
	for name, code := range map[string]string{
		"busy":     "while True:\n    pass",
		"sleeping": "import time\ntime.sleep(600)",
		"reading":  "import sys\nsys.stdin.readline()",
	} {
		t.Run(name, func(t *testing.T) {
			stdinR, _ := io.Pipe()
			out := &lineWriter{lines: make(chan string, 10)}
			intr := make(chan struct{}, 1)
			done := startRun(t, context.Background(), wasmpy.Job{
				Code: "print('ready', flush=True)\n" + code, Stdin: stdinR, Stdout: out, Interrupt: intr,
				Limits: wasmpy.Limits{Timeout: 60e9},
			})
			require.Equal(t, "ready", <-out.lines)
			intr <- struct{}{}
			res := <-done
			require.NotNil(t, res.Error)
			require.Equal(t, wasmpy.KindInterrupted, res.Error.Kind)
			require.Equal(t, "KeyboardInterrupt", res.Error.Type)
			require.Equal(t, 130, res.ExitCode)
			require.Contains(t, res.Stderr, "Traceback (most recent call last):")
			require.True(t, strings.HasSuffix(res.Stderr, "KeyboardInterrupt\n"), res.Stderr)
			require.Equal(t, "ready\n", res.Stdout)
		})
	}
	// The script may catch it, and go on.
	intr := make(chan struct{}, 1)
	out := &lineWriter{lines: make(chan string, 10)}
	done := startRun(t, context.Background(), wasmpy.Job{
		Code:   "try:\n    print('ready', flush=True)\n    while True: pass\nexcept KeyboardInterrupt:\n    print('caught')",
		Stdout: out, Interrupt: intr,
	})
	require.Equal(t, "ready", <-out.lines)
	intr <- struct{}{}
	res := <-done
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "ready\ncaught\n", res.Stdout)
}

// Canceling the context stops the run and keeps what it did.
func TestContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	out := &lineWriter{lines: make(chan string, 10)}
	done := startRun(t, ctx, wasmpy.Job{Code: "print('partial', flush=True)\nwhile True: pass", Stdout: out})
	require.Equal(t, "partial", <-out.lines)
	cancel()
	res := <-done
	require.NotNil(t, res)
	require.Equal(t, wasmpy.KindInterrupted, res.Error.Kind)
	require.Equal(t, "stopped: context canceled", res.Error.Message)
	require.Equal(t, 130, res.ExitCode)
	require.Equal(t, "partial\n", res.Stdout)
}

// Tracebacks are CPython's: source lines and carets, no frames of the
// sandbox's own code (the capabilities live in <wasmpy>).
func TestTracebackForm(t *testing.T) {
	res := run(t, wasmpy.Job{Filename: "job.py", Code: "def f(path):\n    return read_file(path)\n\nf('../../etc/passwd')\n", Grants: []wasmpy.Capability{wasmpy.ReadFile}})
	require.NotNil(t, res.Error)
	sc := bufio.NewScanner(strings.NewReader(res.Stderr))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	require.Equal(t, []string{
		"Traceback (most recent call last):",
		`  File "job.py", line 4, in <module>`,
		"    f('../../etc/passwd')",
		"    ~^^^^^^^^^^^^^^^^^^^^",
		`  File "job.py", line 2, in f`,
		"    return read_file(path)",
	}, lines[:6], res.Stderr)
	require.NotContains(t, res.Stderr, "<wasmpy")
}

func TestArgv0(t *testing.T) {
	for filename, want := range map[string]string{"": "-c", "<string>": "-c", "<stdin>": "-", "s.py": "s.py"} {
		res := run(t, wasmpy.Job{Filename: filename, Code: "import sys; print(sys.argv)", Args: []string{"a"}})
		require.Equal(t, "['"+want+"', 'a']\n", res.Stdout, filename)
	}
	res := run(t, wasmpy.Job{Module: "platform", Args: []string{"--terse"}})
	require.Nil(t, res.Error, res.Stderr)
	require.NotEmpty(t, res.Stdout)
}

// writeCounter counts the writes a stream receives.
type writeCounter struct {
	mu     sync.Mutex
	writes int
	buf    strings.Builder
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	return w.buf.Write(p)
}

// Printing is cheap: stdout is buffered, so 20,000 prints reach the host
// in a handful of writes (they were 40,000, two a print), whole and in
// order with stderr.
func TestStdoutBatchesWrites(t *testing.T) {
	var out writeCounter
	res := run(t, wasmpy.Job{Code: "import sys\nfor i in range(20000): print(i)\nsys.stderr.write('e\\n')\nprint('end')\n",
		Stdout: &out, Stderr: &out})
	require.Nil(t, res.Error, res.Stderr)
	var want strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&want, "%d\n", i)
	}
	require.Equal(t, want.String()+"e\nend\n", out.buf.String())
	require.Less(t, out.writes, 200)
}

// Buffered output still streams: a line printed before a long computation
// arrives while it runs, and a prompt before a read of stdin arrives
// before the script waits for its answer, without flush=True.
func TestBufferedOutputStreams(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lineWriter{lines: make(chan string, 10)}
	done := startRun(t, ctx, wasmpy.Job{Code: "print('computing')\nwhile True: pass\n", Stdout: out})
	require.Equal(t, "computing", within(t, out.lines))
	cancel()
	require.Equal(t, wasmpy.KindInterrupted, (<-done).Error.Kind)

	stdinR, stdinW := io.Pipe()
	prompt := make(chan string, 1)
	stdout := writerFunc(func(p []byte) (int, error) {
		select {
		case prompt <- string(p):
		default:
		}
		return len(p), nil
	})
	done = startRun(t, context.Background(), wasmpy.Job{
		Code:  "import sys\nsys.stdout.write('name? ')\nline = sys.stdin.readline()\nsys.exit(0 if line == 'ada\\n' else 3)\n",
		Stdin: stdinR, Stdout: stdout})
	require.Equal(t, "name? ", within(t, prompt), "the prompt shows before the script waits")
	io.WriteString(stdinW, "ada\n")
	res := <-done
	require.Nil(t, res.Error, res.Stderr)
}

// within is what ch gives, or a failure once a generous bound has passed
// (a hang, on any machine).
func within[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatal("nothing arrived within a minute")
	}
	var zero T
	return zero
}
