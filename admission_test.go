package wasmpy_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
)

// With one slot, a second run waits while the first holds it (here, on its
// stdin), starts only once it ends, and its wait is not charged to its own
// timeout; a run whose caller gives up while it waits fails with the
// caller's cause and never starts.
func TestMaxConcurrentQueuesRuns(t *testing.T) {
	ctx := context.Background()
	sb, err := wasmpy.New(ctx, wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER"), MaxConcurrent: 1})
	require.NoError(t, err)
	defer sb.Close(ctx)

	pr, pw := io.Pipe()
	ready := make(chan struct{})
	var once sync.Once
	first := make(chan runOutcome, 1)
	go func() {
		res, err := sb.Run(ctx, wasmpy.Job{Code: "import sys\nprint('ready', flush=True)\nprint(sys.stdin.readline().strip())",
			Stdin: pr, Stdout: writerFunc(func(p []byte) (int, error) { once.Do(func() { close(ready) }); return len(p), nil })})
		first <- runOutcome{res, err}
	}()
	<-ready // the first run holds the one slot, until its stdin has a line

	var released, wroteEarly atomic.Bool
	second := make(chan runOutcome, 1)
	go func() {
		res, err := sb.Run(ctx, wasmpy.Job{Code: "print('second')", Limits: wasmpy.Limits{Timeout: 3 * time.Second},
			Stdout: writerFunc(func(p []byte) (int, error) {
				if !released.Load() {
					wroteEarly.Store(true)
				}
				return len(p), nil
			})})
		second <- runOutcome{res, err}
	}()

	// A caller that gives up while waiting: the run never starts.
	waitCtx, cancel := context.WithTimeoutCause(ctx, 4*time.Second, errWaitedEnough)
	defer cancel()
	res, err := sb.Run(waitCtx, wasmpy.Job{Code: "print('third')"})
	require.Nil(t, res)
	require.ErrorIs(t, err, errWaitedEnough)
	require.ErrorContains(t, err, "run slots (Config.MaxConcurrent)")

	// The second run has waited longer than its own timeout: it still runs.
	released.Store(true)
	_, err = pw.Write([]byte("go\n"))
	require.NoError(t, err)
	o1 := <-first
	require.NoError(t, o1.err)
	r1 := o1.res
	require.NoError(t, r1.Err())
	require.Equal(t, "ready\ngo\n", r1.Stdout)
	o2 := <-second
	require.NoError(t, o2.err)
	r2 := o2.res
	require.NoError(t, r2.Err(), "the wait is not part of the run's timeout")
	require.Equal(t, "second\n", r2.Stdout)
	require.False(t, wroteEarly.Load(), "the second run started while the first held the only slot")
	require.Greater(t, r2.QueuedMS, 3000.0, "it waited at least while the third did")

	b, err := json.Marshal(r2)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	require.Equal(t, r2.QueuedMS, m["queued_ms"])

	_, err = wasmpy.New(ctx, wasmpy.Config{MaxConcurrent: wasmpy.MaxConcurrentRuns + 1})
	require.ErrorContains(t, err, "Config.MaxConcurrent")
}

type runOutcome struct {
	res *wasmpy.Result
	err error
}

type waitedEnough struct{}

func (waitedEnough) Error() string { return "the caller waited enough" }

var errWaitedEnough error = waitedEnough{}

// The README's example, 50 times at once, on every interpreter: each run
// is admitted in its turn (the default bound, the CPU count) and succeeds
// within its own timeout, however many wait.
func TestFiftyConcurrentRunsOfTheREADMEExample(t *testing.T) {
	for _, kind := range []string{"wasmpy", "sci", "npm"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			sb, err := wasmpy.New(ctx, wasmpy.Config{Interpreter: kind})
			require.NoError(t, err, "run `make` first to install the interpreters")
			defer sb.Close(ctx)
			results := make([]runOutcome, 50)
			var wg sync.WaitGroup
			for i := range results {
				wg.Go(func() {
					res, err := sb.Run(ctx, wasmpy.Job{Code: "print(6*7)"})
					results[i] = runOutcome{res, err}
				})
			}
			wg.Wait()
			queued := 0
			for _, o := range results {
				require.NoError(t, o.err)
				res := o.res
				require.NoError(t, res.Err())
				require.Equal(t, "42\n", res.Stdout)
				if res.QueuedMS > 0 {
					queued++
				}
			}
			require.Positive(t, queued, "50 runs on fewer slots: some waited")
		})
	}
}
