package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/wasmpy/wasmpy"
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

// runWithSignals runs job as python3 runs under Ctrl-C and kill. The first
// SIGINT raises KeyboardInterrupt in the script; a second, before the
// script asks for a line again, stops it at once; SIGTERM stops it. The
// output so far is kept either way. It returns the exit status a stop
// imposes, or 0.
func runWithSignals(ctx context.Context, run func(context.Context, wasmpy.Job) (*wasmpy.Result, error), job *wasmpy.Job, t *terminal) (*wasmpy.Result, int, error) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
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
