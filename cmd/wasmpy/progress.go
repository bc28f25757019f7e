package main

import (
	"fmt"
	"io"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
	"github.com/wasmpy/wasmpy/codegen"
)

// progressLine returns what shows a generation's progress on stderr: on a
// terminal, one line redrawn in place and erased at the end; with
// --progress elsewhere, one line per step. nil when neither.
func progressLine(c *cli.Context) func(codegen.Progress) {
	w := c.App.ErrWriter
	tty := console.IsTerminal(w)
	if !tty && !c.Bool("progress") {
		return nil
	}
	p := &progress{w: w, tty: tty, cmd: c.Command.Name}
	return p.show
}

type progress struct {
	mu  sync.Mutex
	w   io.Writer
	tty bool
	cmd string
}

func (p *progress) show(e codegen.Progress) {
	var what string
	switch e.Step {
	case codegen.StepAsking:
		what = "asking the LLM…"
	case codegen.StepRetrying:
		what = fmt.Sprintf("asking the LLM… retry %d/%d in %.1fs: %s", e.Retry.Retry, e.Retry.Retries, e.Retry.Delay.Seconds(), console.Clean(e.Retry.Cause()))
	case codegen.StepValidating:
		what = "checking the code…"
	case codegen.StepTesting:
		what = "running the tests…"
	case codegen.StepRunning:
		what = "running it…"
	default:
		what = e.Step
	}
	line := fmt.Sprintf("wasmpy: %s: attempt %d/%d: %s", p.cmd, e.Attempt, e.Attempts, what)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		// Redraw in place; the next step's line, or the end, replaces it.
		fmt.Fprintf(p.w, "\r\x1b[K%s", line)
		return
	}
	fmt.Fprintln(p.w, line)
}
