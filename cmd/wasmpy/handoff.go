package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/assets"
	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/resident"
)

// exec's side of the resident (internal/resident): handing it a run, or
// starting it for the runs to come.

// handOff runs job in the user's resident process, and reports whether it
// did. It does not when the resident is switched off, absent (it starts
// one for the runs to come), serves another binary (it replaces it) or
// cannot load cfg; nor for what only this process can do alike: a REPL, a
// session file, a provenance record, streams that are not files.
func handOff(c *cli.Context, cfg wasmpy.Config, job wasmpy.Job, appPath string, sigs chan os.Signal) (bool, error) {
	stdin, okIn := c.App.Reader.(*os.File)
	stdout, okOut := c.App.Writer.(*os.File)
	stderr, okErr := c.App.ErrWriter.(*os.File)
	if !c.Bool("resident") || job.Interactive || c.IsSet("session") || c.Bool("record") || !okIn || !okOut || !okErr {
		return false, nil
	}
	rj, ok := remote(c, cfg, job, appPath)
	if !ok {
		return false, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return false, nil
	}
	binary, err := resident.Binary()
	if err != nil {
		return false, nil
	}
	dir, err := resident.Dir()
	if err != nil {
		return false, nil
	}
	socket, _ := resident.Paths(dir, exe)
	conn, err := resident.Dial(socket)
	if err != nil {
		if errors.Is(err, resident.ErrNotRunning) {
			startResident(exe, rj.Config)
		}
		return false, nil
	}
	defer conn.Close()
	if err := conn.Send(resident.Request{Binary: binary, Op: "run", Run: rj}, stdin, stdout, stderr); err != nil {
		return false, nil
	}
	fwd := resident.ForwardSignals(conn, sigs)
	var rep resident.Reply
	_, err = conn.Recv(&rep)
	forwarded := fwd()
	switch {
	case err != nil:
		return true, &exitError{code: exitWasmpy, msg: "the resident process ended before the run did (WASMPY_RESIDENT=0 runs in this process)"}
	case rep.Fallback != "":
		for _, s := range forwarded { // nothing ran: this process handles them
			sigs <- s
		}
		if rep.Fallback == resident.FallbackStale {
			startResident(exe, rj.Config)
		}
		return false, nil
	case rep.Broken != 0:
		diePipe(rep.Broken)
	case rep.Err != "":
		return true, &exitError{code: exitWasmpy, msg: rep.Err}
	case rep.Result == nil:
		return true, &exitError{code: exitWasmpy, msg: "the resident sent no result"}
	}
	file := func(path string) ([]byte, bool) {
		b, ok := rep.Files[path]
		return b, ok
	}
	return true, endExec(c, rep.Result, rep.Stop, file, rep.AtLineStart)
}

// remote is job as the resident needs it, every path made absolute: the
// resident has a working directory of its own.
func remote(c *cli.Context, cfg wasmpy.Config, job wasmpy.Job, appPath string) (*resident.Job, bool) {
	abs := func(p string) string {
		if p == "" {
			return ""
		}
		a, err := filepath.Abs(p)
		if err != nil {
			return p
		}
		return a
	}
	cfg = withInterpreter(c, cfg)
	if cfg.CacheDir == "" {
		dir, err := assets.DefaultCacheDir()
		if err != nil {
			return nil, false
		}
		cfg.CacheDir = dir
	}
	switch cfg.Interpreter = assets.Canonical(cfg.Interpreter); cfg.Interpreter {
	case "", assets.Core, assets.Sci, assets.NPM:
	default:
		cfg.Interpreter = abs(cfg.Interpreter)
	}
	cfg.CacheDir, cfg.Workspace.Stable = abs(cfg.CacheDir), abs(cfg.Workspace.Stable)
	cfg.Packages = slices.Clone(cfg.Packages)
	for i, p := range cfg.Packages {
		cfg.Packages[i] = abs(p)
	}
	rj := &resident.Job{Config: resident.ConfigOf(cfg), Code: job.Code, Filename: job.Filename, Args: job.Args, Module: job.Module,
		Limits: job.Limits, Grants: job.Grants, HTTP: job.HTTP, Imports: job.AllowImports, Tier: job.Tier, JSON: c.Bool("json"), Out: c.String("out") != ""}
	if job.App != nil {
		if appPath == "" {
			return nil, false
		}
		rj.App = abs(appPath)
	}
	switch in := job.Stdin.(type) {
	case nil:
	case *bytes.Reader:
		rj.Stdin, rj.Input = "bytes", make([]byte, in.Len())
		in.ReadAt(rj.Input, 0)
	default:
		if in != c.App.Reader {
			return nil, false
		}
		rj.Stdin = "fd"
	}
	return rj, true
}

// diePipe ends this process as writing to its stream fd with no reader
// left does: by SIGPIPE, which the Go runtime raises for fds 1 and 2.
func diePipe(fd int) {
	f := os.Stdout
	if fd == 2 {
		f = os.Stderr
	}
	f.Write([]byte{'\n'})
	os.Exit(128 + int(syscall.SIGPIPE)) // the reader came back: a shell's status for it
}

// startResident starts the user's resident process for this binary in
// the background, warmed with cfg (in its environment, which only this
// user can read), for the runs to come; this run does not wait for it.
func startResident(exe string, cfg resident.Config) {
	cmd, err := spawnCommand(exe, cfg)
	if err != nil {
		return
	}
	if cmd.Start() == nil {
		cmd.Process.Release()
	}
}

// spawnCommand is `wasmpy resident run` in a session of its own, away
// from this terminal and its signals, in /, with no streams.
func spawnCommand(exe string, cfg resident.Config) (*exec.Cmd, error) {
	warm, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "resident", "run")
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), resident.WarmEnv+"="+string(warm))
	detach(cmd)
	return cmd, nil
}
