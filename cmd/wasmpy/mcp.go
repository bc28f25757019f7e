package main

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
	"github.com/wasmpy/wasmpy/mcpserver"
)

func mcpCommand() *cli.Command {
	return &cli.Command{
		Name:  "mcp",
		Usage: "serve the sandbox to an agent over MCP on stdin and stdout",
		Description: "Speaks the Model Context Protocol (JSON-RPC, one message a line) on stdin and stdout, for an\n" +
			"agent that starts it as a subprocess. Tools: run_python, write_file, read_file and\n" +
			"list_files (a workspace private to the session, in a temporary directory), and every\n" +
			"skill in --skills DIR (default: the built-in examples). --timeout, --memory and --fuel\n" +
			"bound run_python and are the defaults of skills that set none. Every run is recorded\n" +
			"in the provenance database. Diagnostics go to stderr; the session ends at EOF.",
		Flags: append(append([]cli.Flag{skillsFlag, dbFlag, interpreterFlag, engineFlag, cacheFlag,
			&cli.DurationFlag{Name: "skill-check-timeout", Usage: "bound on checking one skill's handler at load (0: the default)"},
		}, admissionFlags()...), append(limitFlags(), llmFlags()...)...),
		Action: mcpAction,
	}
}

func mcpAction(c *cli.Context) error {
	if err := checkEngine(c); err != nil {
		return err
	}
	if c.NArg() > 0 {
		return usageErr("mcp: unexpected argument %q", c.Args().First())
	}
	lim, err := limits(c)
	if err != nil {
		return err
	}
	adm, err := admission(c)
	if err != nil {
		return err
	}
	st, err := openStore(c)
	if err != nil {
		return err
	}
	defer st.Close()
	ex, err := newExecutor(c, st, lim)
	if err != nil {
		return err
	}
	defer ex.Close(c.Context)
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A client lists the tools as soon as it connects: load the skills first.
	reg, err := loadSkills(c, ex, c.StringSlice("skills"))
	if err != nil {
		return err
	}
	warnProblems(c.App.ErrWriter, reg)
	srv, err := mcpserver.New(ctx, mcpserver.Config{Executor: ex, Registry: reg, Admission: adm, ExecLimits: lim,
		Version: wasmpyVersion(), Logger: slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return &exitError{code: exitWasmpy, msg: console.OneLine(err)}
	}
	defer srv.Close()
	err = srv.Run(ctx, mcpserver.NewStdioTransport(c.App.Reader, c.App.Writer))
	if err != nil && !errors.Is(err, io.EOF) && ctx.Err() == nil {
		return &exitError{code: exitWasmpy, msg: "mcp: " + console.OneLine(err)}
	}
	return nil
}
