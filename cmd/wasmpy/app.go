package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
)

// Exit statuses of wasmpy's own, beside the script's and the sandbox
// outcomes' (wasmpy.Kind.ExitCode).
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
	err := app.RunContext(ctx, scriptArgs(args))
	var status exitStatus
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &status):
		return int(status)
	case errors.As(err, &ee):
		fmt.Fprintf(stderr, "wasmpy: %s\n", console.Clean(ee.msg))
		return ee.code
	case isUsage(err):
		fmt.Fprintf(stderr, "wasmpy: %s\nRun 'wasmpy --help' for usage.\n", console.Clean(err.Error()))
		return exitUsage
	default:
		fmt.Fprintf(stderr, "%s\n", console.Clean(console.OneLine(err)))
		return exitWasmpy
	}
}

// isUsage recognises the flag parser's errors.
func isUsage(err error) bool {
	s := err.Error()
	return strings.Contains(s, "flag provided but not defined") || strings.Contains(s, "invalid value") ||
		strings.Contains(s, "flag needs an argument") || strings.Contains(s, "Required flag")
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:                 "wasmpy",
		Usage:                "run untrusted Python in a WebAssembly sandbox",
		Reader:               stdin,
		Writer:               stdout,
		ErrWriter:            stderr,
		HideHelpCommand:      true,
		EnableBashCompletion: true,
		ExitErrHandler:       func(*cli.Context, error) {}, // run reports errors
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageErr("%v%s", err, flagHint(err, c.App.Flags))
		},
		Flags: []cli.Flag{&cli.BoolFlag{Name: "version", Usage: "print the versions of wasmpy and its interpreters"}},
		Action: func(c *cli.Context) error {
			switch {
			case c.Bool("version"):
				return printVersion(c)
			case c.Args().First() == "help":
				return showHelp(c, c.Args().Tail())
			case c.Args().Present():
				return unknownCommand(c.App.Commands, "", c.Args().First())
			case console.IsTerminal(c.App.Reader):
				// python3 with no arguments on a terminal: the REPL.
				return c.App.Command("exec").Run(c, "exec")
			}
			out := c.App.Writer
			c.App.Writer = c.App.ErrWriter // usage for a mistake goes to stderr
			cli.ShowAppHelp(c)
			c.App.Writer = out
			return &exitError{code: exitUsage, msg: "no command given (stdin is not a terminal, so no interactive session)"}
		},
		Commands: withUsageErrors([]*cli.Command{execCommand(), setupCommand(), genCommand(), defCommand(), netCommand(), skillCommand(), serveCommand(), mcpCommand(), historyCommand(), statsCommand(), tiersCommand(), tokenCommand(), completionCommand(), pkgCommand(), residentCommand()}),
	}
}

// showHelp is `wasmpy help [COMMAND [SUBCOMMAND]]`.
func showHelp(c *cli.Context, names []string) error {
	if len(names) == 0 {
		return cli.ShowAppHelp(c)
	}
	cmds, path := c.App.Commands, ""
	var cmd *cli.Command
	for _, name := range names {
		cmd = nil
		for _, cc := range cmds {
			if cc.HasName(name) {
				cmd = cc
			}
		}
		if cmd == nil {
			return unknownCommand(cmds, path, name)
		}
		path += cmd.Name + " "
		cmds = cmd.Subcommands
	}
	args := append([]string{"wasmpy"}, names...)
	return c.App.RunContext(c.Context, append(args, "--help"))
}

// unknownCommand is the usage error for a mistyped command, with the
// nearest one's name when there is one.
func unknownCommand(cmds []*cli.Command, parent, name string) error {
	best, bestDist := "", 3 // farther than 2 edits is no typo
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		if d := editDistance(name, c.Name); d < bestDist {
			best, bestDist = c.Name, d
		}
	}
	msg := fmt.Sprintf("unknown command %q", strings.TrimSpace(parent+" "+name))
	if best != "" {
		msg += fmt.Sprintf("; did you mean %q?", strings.TrimSpace(parent+" "+best))
	}
	return usageErr("%s (run '%s' for the list)", msg, strings.TrimSpace("wasmpy help "+parent))
}

// flagHint is "; did you mean --NAME?" for the flag parser's error about
// an undefined flag that is a typo of one of flags, else "".
func flagHint(err error, flags []cli.Flag) string {
	const undefined = "flag provided but not defined: "
	_, typed, ok := strings.Cut(err.Error(), undefined)
	if !ok {
		return ""
	}
	typed = strings.TrimLeft(strings.TrimSpace(typed), "-")
	best, bestDist := "", 3 // farther than 2 edits is no typo
	if len(typed) <= 3 {
		bestDist = 2 // a short name: one edit at most
	}
	for _, f := range flags {
		for _, name := range f.Names() {
			if d := editDistance(typed, name); d < bestDist && len(name) > 1 {
				best, bestDist = name, d
			}
		}
	}
	if best == "" {
		return ""
	}
	return "; did you mean --" + best + "?"
}

// editDistance is the Levenshtein distance, with a transposition counting
// as one edit ("lsit" is one from "list").
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range rb {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// scriptArgs keeps wasmpy's flags before the script, as python3 does:
// in `wasmpy exec [FLAGS] (-c CODE | -m MODULE | SCRIPT) ARGS...`, ARGS
// are the script's even when they look like wasmpy's flags. It marks
// where they start with "--", which the flag parser understands.
func scriptArgs(args []string) []string {
	if len(args) < 2 || args[1] != "exec" || slices.Contains(args, "--generate-bash-completion") {
		return args
	}
	valued := map[string]bool{}
	for _, f := range execCommand().Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			valued[n] = !isBool
		}
	}
	for i := 2; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return args
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case a == "-" || !strings.HasPrefix(a, "-"): // the script
			return slices.Concat(args[:i], []string{"--"}, args[i:])
		case name == "c" || name == "m":
			if !hasValue {
				i++
			}
			if i >= len(args) {
				return args // no value: the flag parser says so
			}
			return slices.Concat(args[:i+1], []string{"--"}, args[i+1:])
		case valued[name] && !hasValue:
			i++ // the flag's value
		}
	}
	return args
}

// withUsageErrors makes a bad flag of any command a one-line usage error
// instead of the command's help on stdout.
func withUsageErrors(cmds []*cli.Command) []*cli.Command {
	for _, cmd := range cmds {
		cmd.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
			return usageErr("%s %v%s", cmd.Name, err, flagHint(err, cmd.Flags))
		}
		if len(cmd.Subcommands) > 0 && cmd.Action == nil {
			cmd.Action = func(c *cli.Context) error {
				if c.Args().Present() {
					return unknownCommand(cmd.Subcommands, cmd.Name, c.Args().First())
				}
				return cli.ShowSubcommandHelp(c)
			}
		}
		withUsageErrors(cmd.Subcommands)
	}
	return cmds
}
