package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/resident"
)

// `wasmpy resident`: the commands that start, stop and ask the user's
// resident process. The resident itself (its server, its protocol, its
// socket) is internal/resident; handoff.go is exec's side of it.

func residentCommand() *cli.Command {
	idle := &cli.DurationFlag{Name: "idle", Value: resident.DefaultIdle, EnvVars: []string{"WASMPY_RESIDENT_IDLE"},
		Usage: "exit after this long without a run"}
	return &cli.Command{
		Name:  "resident",
		Usage: "keep wasmpy loaded in a per-user background process, so that exec starts fast",
		Description: "wasmpy exec hands its run to your resident process when one runs, and starts one\n" +
			"(in the background, for the runs to come) when none does; WASMPY_RESIDENT=0 or\n" +
			"--resident=false keeps every run in-process. The resident runs each job in a fresh\n" +
			"instance, as exec does, writing to exec's own stdout and stderr and reading its stdin;\n" +
			"exec forwards Ctrl-C and SIGTERM, and exits with the run's status. Runs it cannot serve\n" +
			"alike run in-process: the REPL (-i, or no script on a terminal), --session, --record.\n\n" +
			"The socket is in $XDG_RUNTIME_DIR/wasmpy (else wasmpy/run in the user cache dir),\n" +
			"mode 0700; both ends check that the other is the same user. One resident serves one\n" +
			"installed wasmpy binary: a rebuilt binary replaces it, and a changed interpreter or\n" +
			"package set is loaded again. It exits after --idle without a run (default 15m).",
		Subcommands: []*cli.Command{
			{Name: "run", Usage: "serve in the foreground until idle (what exec starts)", Flags: []cli.Flag{idle}, Action: residentRun},
			{Name: "start", Usage: "start the resident in the background, unless it runs", Flags: []cli.Flag{idle}, Action: residentStart},
			{Name: "stop", Usage: "stop the resident once its runs end", Action: residentStop},
			{Name: "status", Usage: "say whether the resident runs, and what it holds", Action: residentStatusAction},
		},
	}
}

func residentRun(c *cli.Context) error {
	if c.Duration("idle") <= 0 {
		return usageErr("--idle %s: want a positive duration such as 30s or 15m", c.Duration("idle"))
	}
	_, binary, socket, lock, err := residentPaths()
	if err != nil {
		return &exitError{code: exitWasmpy, msg: message(err)}
	}
	ln, err := resident.Listen(socket, lock)
	if err != nil {
		return &exitError{code: exitWasmpy, msg: message(err)}
	}
	s := resident.NewServer(ln, binary, c.Duration("idle"))
	if warm := os.Getenv(resident.WarmEnv); warm != "" {
		os.Unsetenv(resident.WarmEnv)
		var w resident.Config
		if json.Unmarshal([]byte(warm), &w) == nil {
			s.Warm(w)
		}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		if _, ok := <-sigs; ok {
			s.Retire()
		}
	}()
	s.Serve()
	return nil
}

// residentPaths are this binary's path and identity and its resident's socket and lock.
func residentPaths() (exe, binary, socket, lock string, err error) {
	if exe, err = os.Executable(); err != nil {
		return
	}
	if binary, err = resident.Binary(); err != nil {
		return
	}
	dir, err := resident.Dir()
	if err != nil {
		return
	}
	socket, lock = resident.Paths(dir, exe)
	return
}

// ask sends the resident a request with no run; ErrNotRunning when none
// of this binary runs.
func ask(op string) (*resident.Reply, error) {
	_, binary, socket, _, err := residentPaths()
	if err != nil {
		return nil, err
	}
	conn, err := resident.Dial(socket)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := conn.Send(resident.Request{Binary: binary, Op: op}); err != nil {
		return nil, err
	}
	var rep resident.Reply
	if _, err := conn.Recv(&rep); err != nil {
		return nil, err
	}
	if rep.Fallback == resident.FallbackStale {
		return nil, resident.ErrNotRunning // one of another build, stopping now
	}
	return &rep, nil
}

func residentStart(c *cli.Context) error {
	if c.Duration("idle") <= 0 {
		return usageErr("--idle %s: want a positive duration such as 30s or 15m", c.Duration("idle"))
	}
	if _, err := ask("status"); err == nil {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return &exitError{code: exitWasmpy, msg: message(err)}
	}
	cmd, err := spawnCommand(exe, defaultWire(c))
	if err != nil {
		return &exitError{code: exitWasmpy, msg: message(err)}
	}
	cmd.Env = append(cmd.Env, fmt.Sprintf("WASMPY_RESIDENT_IDLE=%s", c.Duration("idle")))
	if err := cmd.Start(); err != nil {
		return &exitError{code: exitWasmpy, msg: message(err)}
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if _, err := ask("status"); err == nil {
			return nil
		}
		select {
		case err := <-exited:
			if _, aerr := ask("status"); aerr == nil {
				return nil // another start won the race
			}
			return &exitError{code: exitWasmpy, msg: fmt.Sprintf("the resident exited as it started: %v", err)}
		case <-time.After(20 * time.Millisecond):
		}
	}
	return &exitError{code: exitWasmpy, msg: "the resident did not answer within a minute"}
}

// defaultWire is the configuration of `wasmpy exec SCRIPT` with no flags
// (but those of the environment), for `resident start` to load ahead.
func defaultWire(c *cli.Context) resident.Config {
	var w resident.Config
	app := &cli.App{Writer: c.App.ErrWriter, ErrWriter: c.App.ErrWriter, Commands: []*cli.Command{{Name: "exec", Flags: execCommand().Flags,
		Action: func(c *cli.Context) error {
			cfg, err := sandboxConfig(c)
			if err != nil {
				return err
			}
			if rj, ok := remote(c, cfg, wasmpy.Job{}, ""); ok {
				w = rj.Config
			}
			return nil
		}}}}
	app.Run([]string{"wasmpy", "exec"})
	return w
}

func residentStop(c *cli.Context) error {
	if _, err := ask("stop"); err != nil && !errors.Is(err, resident.ErrNotRunning) {
		return &exitError{code: exitWasmpy, msg: message(err)}
	}
	return nil
}

func residentStatusAction(c *cli.Context) error {
	rep, err := ask("status")
	if errors.Is(err, resident.ErrNotRunning) {
		return &exitError{code: 1, msg: "no resident is running"}
	}
	if err != nil || rep.Status == nil {
		return &exitError{code: exitWasmpy, msg: "resident status: " + message(err)}
	}
	st := rep.Status
	fmt.Fprintf(c.App.Writer, "pid %d, up %s, %d runs (%d now), %d configurations loaded; exits after %s without a run\n",
		st.PID, time.Since(st.Started).Round(time.Second), st.Runs, st.Active, st.Sandboxes, st.Idle)
	return nil
}

// message is err as an exitError's message, which run prefixes with "wasmpy: ".
func message(err error) string { return strings.TrimPrefix(console.OneLine(err), "wasmpy: ") }
