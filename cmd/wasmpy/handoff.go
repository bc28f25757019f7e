package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/assets"
	"github.com/wasmpy/wasmpy/hostfuncs"
	"github.com/wasmpy/wasmpy/internal/resident"
	"github.com/wasmpy/wasmpy/llm"
	"github.com/wasmpy/wasmpy/workspace"
)

// The messages between the CLI and its resident (see resident.go). A
// client sends one request, with its stdin, stdout and stderr for a run,
// then the signals it gets; the resident answers once.

// request is a client's message.
type request struct {
	Binary string     `json:"binary"` // resident.Binary() of the client
	Op     string     `json:"op"`     // "run", "status", "stop"; "" for a signal
	Run    *remoteJob `json:"run,omitempty"`
	Signal string     `json:"signal,omitempty"` // "SIGINT", "SIGTERM": forwarded during a run
}

// remoteJob is an exec run as the client has read it: every path absolute,
// every flag and environment variable resolved.
type remoteJob struct {
	Config   wireConfig          `json:"config"`
	Code     string              `json:"code"`
	Filename string              `json:"filename"`
	Args     []string            `json:"args"`
	Module   string              `json:"module"`
	App      string              `json:"app"`   // the directory or zipapp at /app; "": none
	Stdin    string              `json:"stdin"` // "fd" (the client's, streamed), "bytes", or "": none
	Input    []byte              `json:"input,omitempty"`
	Limits   wasmpy.Limits       `json:"limits"`
	Grants   []wasmpy.Capability `json:"grants"`
	Imports  []string            `json:"imports"` // the tier's import policy (Job.AllowImports)
	Tier     string              `json:"tier"`
	JSON     bool                `json:"json"`
	Out      bool                `json:"out"` // send back the contents of the files the run wrote

	HTTP *hostfuncs.HTTPPolicy `json:"http,omitempty"` // what a granted http_request reaches (--allow-http)
}

// wireConfig is the part of wasmpy.Config the CLI sets.
type wireConfig struct {
	Interpreter  string              `json:"interpreter"`
	Engine       string              `json:"engine,omitempty"`
	CacheDir     string              `json:"cache_dir"`
	AllowImports []string            `json:"allow_imports"`
	Workspace    workspace.Config    `json:"workspace"`
	LLM          wireLLM             `json:"llm"`
	LLMBudget    hostfuncs.LLMBudget `json:"llm_budget"`
	Packages     []string            `json:"packages"`
	Preload      []string            `json:"preload"`
}

type wireLLM struct {
	BaseURL, Model, APIKey string
	Timeout                time.Duration
}

func toWire(cfg wasmpy.Config) wireConfig {
	return wireConfig{Interpreter: cfg.Interpreter, Engine: cfg.Engine, CacheDir: cfg.CacheDir, AllowImports: cfg.AllowImports,
		Workspace: cfg.Workspace, LLMBudget: cfg.LLMBudget, Packages: cfg.Packages, Preload: cfg.Preload,
		LLM: wireLLM{BaseURL: cfg.LLM.BaseURL, Model: cfg.LLM.Model, APIKey: cfg.LLM.APIKey, Timeout: cfg.LLM.Timeout}}
}

func (w wireConfig) config() wasmpy.Config {
	cfg := wasmpy.Config{Interpreter: w.Interpreter, Engine: w.Engine, CacheDir: w.CacheDir, AllowImports: w.AllowImports,
		Workspace: w.Workspace, LLMBudget: w.LLMBudget, Packages: w.Packages, Preload: w.Preload}
	cfg.LLM = llm.Config{BaseURL: w.LLM.BaseURL, Model: w.LLM.Model, APIKey: w.LLM.APIKey, Timeout: w.LLM.Timeout}
	return cfg
}

// reply is the resident's one answer.
type reply struct {
	// Fallback says why the client must run the job itself (nothing of it
	// has run): "stale" when the resident's binary is not the client's.
	Fallback    string         `json:"fallback,omitempty"`
	Result      *wasmpy.Result `json:"result,omitempty"`
	Stop        int            `json:"stop,omitempty"` // the exit status a signal imposed
	Err         string         `json:"err,omitempty"`  // the run failed in wasmpy itself
	AtLineStart bool           `json:"at_line_start"`
	// Broken is the client's stream (1 stdout, 2 stderr) whose reader went
	// away: the client ends by SIGPIPE, as it would writing there itself.
	Broken int               `json:"broken,omitempty"`
	Files  map[string][]byte `json:"files,omitempty"`
	Status *residentStatus   `json:"status,omitempty"`
}

const fallbackStale = "stale"

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
	if err := conn.Send(request{Binary: binary, Op: "run", Run: rj}, stdin, stdout, stderr); err != nil {
		return false, nil
	}
	fwd := forwardSignals(conn, sigs)
	var rep reply
	_, err = conn.Recv(&rep)
	forwarded := fwd()
	switch {
	case err != nil:
		return true, &exitError{code: exitWasmpy, msg: "the resident process ended before the run did (WASMPY_RESIDENT=0 runs in this process)"}
	case rep.Fallback != "":
		for _, s := range forwarded { // nothing ran: this process handles them
			sigs <- s
		}
		if rep.Fallback == fallbackStale {
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
func remote(c *cli.Context, cfg wasmpy.Config, job wasmpy.Job, appPath string) (*remoteJob, bool) {
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
	rj := &remoteJob{Config: toWire(cfg), Code: job.Code, Filename: job.Filename, Args: job.Args, Module: job.Module,
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

// forwardSignals sends the resident the signals this process gets during
// the run; stop ends that and returns what it sent.
func forwardSignals(conn *resident.Conn, sigs chan os.Signal) (stop func() []os.Signal) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var sent []os.Signal
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case s := <-sigs:
				name := "SIGINT"
				if s == syscall.SIGTERM {
					name = "SIGTERM"
				}
				sent = append(sent, s)
				conn.Send(request{Signal: name})
			case <-done:
				return
			}
		}
	}()
	return func() []os.Signal {
		close(done)
		wg.Wait()
		return sent
	}
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
func startResident(exe string, cfg wireConfig) {
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
func spawnCommand(exe string, cfg wireConfig) (*exec.Cmd, error) {
	warm, err := jsonString(cfg)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "resident", "run")
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), warmEnv+"="+warm)
	detach(cmd)
	return cmd, nil
}
