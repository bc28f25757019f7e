package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"
)

// Exit statuses of wasmpy's own, beside the script's and the sandbox
// outcomes' (wasm.ExitCode).
const (
	exitUsage  = 2   // bad flags, arguments or input files
	exitWasmpy = 125 // wasmpy itself failed: no interpreter, a broken cache...
)

// exitError carries a one-line message and the status to exit with.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func usageErr(format string, args ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, args...)}
}

// exitStatus ends a command with a status and no message (the script's own).
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// run is the whole program, testable: it never panics or exits.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	app := newApp(stdin, stdout, stderr)
	err := app.RunContext(ctx, args)
	var status exitStatus
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &status):
		return int(status)
	case errors.As(err, &ee):
		fmt.Fprintf(stderr, "wasmpy: %s\n", clean(ee.msg))
		return ee.code
	case isUsage(err):
		fmt.Fprintf(stderr, "wasmpy: %s\nRun 'wasmpy --help' for usage.\n", clean(err.Error()))
		return exitUsage
	default:
		fmt.Fprintf(stderr, "%s\n", clean(oneLine(err)))
		return exitWasmpy
	}
}

// isUsage recognises the flag parser's errors.
func isUsage(err error) bool {
	s := err.Error()
	return strings.Contains(s, "flag provided but not defined") || strings.Contains(s, "invalid value") ||
		strings.Contains(s, "flag needs an argument") || strings.Contains(s, "Required flag")
}

func oneLine(err error) string {
	s := err.Error()
	if !strings.HasPrefix(s, "wasmpy:") {
		s = "wasmpy: " + s
	}
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", " ")
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:            "wasmpy",
		Usage:           "run untrusted Python in a WebAssembly sandbox",
		Reader:          stdin,
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		ExitErrHandler:  func(*cli.Context, error) {}, // run reports errors
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageErr("%v", err)
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageErr("unknown command %q: run 'wasmpy --help' for the list", c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
		Commands: withUsageErrors([]*cli.Command{execCommand(), setupCommand(), genCommand(), defCommand(), netCommand(), skillCommand(), serveCommand(), historyCommand(), statsCommand()}),
	}
}

// withUsageErrors makes a bad flag of any command a one-line usage error
// instead of the command's help on stdout.
func withUsageErrors(cmds []*cli.Command) []*cli.Command {
	for _, cmd := range cmds {
		cmd.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
			return usageErr("%s %v", cmd.Name, err)
		}
		withUsageErrors(cmd.Subcommands)
	}
	return cmds
}
