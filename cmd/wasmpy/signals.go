package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/workspace"
)

// Exit statuses a signal imposes, as a shell reports python3 killed by it.
const (
	exitSIGINT  = 130
	exitSIGTERM = 143
)

var (
	errSecondInterrupt = errors.New("a second Ctrl-C")
	errSIGTERM         = errors.New("SIGTERM")
)

// notifySignals catches SIGINT and SIGTERM from now on, so that one that
// comes while the sandbox loads still gets its result printed; stop
// releases them.
func notifySignals() (sigs chan os.Signal, stop func()) {
	sigs = make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	return sigs, func() { signal.Stop(sigs) }
}

// loadWithSignals loads the sandbox, unless SIGINT or SIGTERM comes first:
// then it returns the exit status the signal imposes, leaving the load
// behind (the process is about to end).
func loadWithSignals(c *cli.Context, cfg wasmpy.Config, sigs <-chan os.Signal) (*wasmpy.Sandbox, int, error) {
	type loaded struct {
		sb  *wasmpy.Sandbox
		err error
	}
	done := make(chan loaded, 1)
	go func() {
		sb, err := newSandbox(c, cfg)
		done <- loaded{sb, err}
	}()
	select {
	case l := <-done:
		return l.sb, 0, l.err
	case s := <-sigs:
		go func() {
			if l := <-done; l.sb != nil {
				l.sb.Close(context.Background())
			}
		}()
		if s == syscall.SIGTERM {
			return nil, exitSIGTERM, nil
		}
		return nil, exitSIGINT, nil
	}
}

// notRun is the result of a run stopped before it began.
func notRun(status int, why string) *wasmpy.Result {
	return &wasmpy.Result{ExitCode: status, Output: json.RawMessage("null"),
		Error:     &wasmpy.Error{Kind: wasmpy.KindInterrupted, Message: why},
		HostCalls: []wasmpy.HostCall{}, Files: []workspace.FileChange{}, Packages: []wasmpy.PackageSet{}}
}

// runWithSignals runs job as python3 runs under Ctrl-C and kill. The first
// SIGINT raises KeyboardInterrupt in the script; a second, before the
// script asks for a line again, stops it at once; SIGTERM stops it. The
// output so far is kept either way. It returns the exit status a stop
// imposes, or 0.
func runWithSignals(ctx context.Context, run func(context.Context, wasmpy.Job) (*wasmpy.Result, error), job *wasmpy.Job, t *terminal, sigs chan os.Signal) (*wasmpy.Result, int, error) {
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
					status.Store(exitSIGTERM)
					cancel(errSIGTERM)
				case unanswered.Add(1) > 1:
					status.CompareAndSwap(0, exitSIGINT)
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
