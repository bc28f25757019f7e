package console

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"sync/atomic"
	"syscall"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/workspace"
)

// Exit statuses a signal imposes, as a shell reports python3 killed by it.
const (
	ExitSIGINT  = 130
	ExitSIGTERM = 143
)

var (
	errSecondInterrupt = errors.New("a second Ctrl-C")
	errSIGTERM         = errors.New("SIGTERM")
)

// NotRun is the result of a run stopped before it began.
func NotRun(status int, why string) *wasmpy.Result {
	return &wasmpy.Result{ExitCode: status, Output: json.RawMessage("null"),
		Error:     &wasmpy.Error{Kind: wasmpy.KindInterrupted, Message: why},
		HostCalls: []wasmpy.HostCall{}, Files: []workspace.FileChange{}, Packages: []wasmpy.PackageSet{}}
}

// Run runs job as python3 runs under Ctrl-C and kill. The first
// SIGINT raises KeyboardInterrupt in the script; a second, before the
// script asks for a line again, stops it at once; SIGTERM stops it. The
// output so far is kept either way. It returns the exit status a stop
// imposes, or 0.
func Run(ctx context.Context, run func(context.Context, wasmpy.Job) (*wasmpy.Result, error), job *wasmpy.Job, t *Terminal, sigs chan os.Signal) (*wasmpy.Result, int, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	interrupt := make(chan struct{}, 1)
	job.Interrupt = interrupt
	var unanswered atomic.Int32 // Ctrl-Cs since the script last asked for a line
	var status atomic.Int32
	if t != nil {
		defer t.restore()
		t.onRead = func() { unanswered.Store(0) }
		t.onCtrlC = func() {
			select {
			case sigs <- os.Interrupt:
			default:
			}
		}
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case s := <-sigs:
				switch {
				case s == syscall.SIGTERM:
					status.Store(ExitSIGTERM)
					cancel(errSIGTERM)
				case unanswered.Add(1) > 1:
					status.CompareAndSwap(0, ExitSIGINT)
					cancel(errSecondInterrupt)
				default:
					select {
					case interrupt <- struct{}{}:
					default:
					}
				}
			case <-done:
				return
			}
		}
	}()
	res, err := run(ctx, *job)
	return res, int(status.Load()), err
}
