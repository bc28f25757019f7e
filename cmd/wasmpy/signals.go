package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
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
			return nil, console.ExitSIGTERM, nil
		}
		return nil, console.ExitSIGINT, nil
	}
}
