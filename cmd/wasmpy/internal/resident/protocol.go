package resident

import (
	"time"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/hostfuncs"
	"github.com/wasmpy/wasmpy/llm"
	"github.com/wasmpy/wasmpy/workspace"
)

// The messages between the CLI and its resident. A client sends one
// Request, with its stdin, stdout and stderr for a run, then the signals
// it gets; the resident answers once, with a Reply.

// Request is a client's message.
type Request struct {
	Binary string `json:"binary"` // Binary() of the client
	Op     string `json:"op"`     // "run", "status", "stop"; "" for a signal
	Run    *Job   `json:"run,omitempty"`
	Signal string `json:"signal,omitempty"` // "SIGINT", "SIGTERM": forwarded during a run
}

// Job is an exec run as the client has read it: every path absolute,
// every flag and environment variable resolved.
type Job struct {
	Config   Config              `json:"config"`
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

// Config is the part of wasmpy.Config the CLI sets; it also names the
// sandbox the resident keeps for it.
type Config struct {
	Interpreter  string              `json:"interpreter"`
	Engine       string              `json:"engine,omitempty"`
	CacheDir     string              `json:"cache_dir"`
	AllowImports []string            `json:"allow_imports"`
	Workspace    workspace.Config    `json:"workspace"`
	LLM          LLM                 `json:"llm"`
	LLMBudget    hostfuncs.LLMBudget `json:"llm_budget"`
	Packages     []string            `json:"packages"`
	Preload      []string            `json:"preload"`
}

// LLM is the part of llm.Config that travels.
type LLM struct {
	BaseURL, Model, APIKey string
	Timeout                time.Duration
}

// ConfigOf is cfg as it travels.
func ConfigOf(cfg wasmpy.Config) Config {
	return Config{Interpreter: cfg.Interpreter, Engine: cfg.Engine, CacheDir: cfg.CacheDir, AllowImports: cfg.AllowImports,
		Workspace: cfg.Workspace, LLMBudget: cfg.LLMBudget, Packages: cfg.Packages, Preload: cfg.Preload,
		LLM: LLM{BaseURL: cfg.LLM.BaseURL, Model: cfg.LLM.Model, APIKey: cfg.LLM.APIKey, Timeout: cfg.LLM.Timeout}}
}

// Sandbox is the wasmpy.Config c stands for.
func (c Config) Sandbox() wasmpy.Config {
	cfg := wasmpy.Config{Interpreter: c.Interpreter, Engine: c.Engine, CacheDir: c.CacheDir, AllowImports: c.AllowImports,
		Workspace: c.Workspace, LLMBudget: c.LLMBudget, Packages: c.Packages, Preload: c.Preload}
	cfg.LLM = llm.Config{BaseURL: c.LLM.BaseURL, Model: c.LLM.Model, APIKey: c.LLM.APIKey, Timeout: c.LLM.Timeout}
	return cfg
}

// Reply is the resident's one answer.
type Reply struct {
	// Fallback says why the client must run the job itself (nothing of it
	// has run): FallbackStale when the resident's binary is not the client's.
	Fallback    string         `json:"fallback,omitempty"`
	Result      *wasmpy.Result `json:"result,omitempty"`
	Stop        int            `json:"stop,omitempty"` // the exit status a signal imposed
	Err         string         `json:"err,omitempty"`  // the run failed in wasmpy itself
	AtLineStart bool           `json:"at_line_start"`
	// Broken is the client's stream (1 stdout, 2 stderr) whose reader went
	// away: the client ends by SIGPIPE, as it would writing there itself.
	Broken int               `json:"broken,omitempty"`
	Files  map[string][]byte `json:"files,omitempty"`
	Status *Status           `json:"status,omitempty"`
}

// FallbackStale is the Fallback of a resident that serves another binary
// than the client's: it is stopping, and the client may start its own.
const FallbackStale = "stale"

// Status is what `wasmpy resident status` shows.
type Status struct {
	PID       int           `json:"pid"`
	Started   time.Time     `json:"started"`
	Runs      int           `json:"runs"`
	Active    int           `json:"active"`
	Sandboxes int           `json:"sandboxes"`
	Idle      time.Duration `json:"idle"`
}

// WarmEnv carries, in the environment of a resident being started, the
// Config (JSON) it loads as it starts: that of the run whose client
// started it. Only its user can read a process's environment.
const WarmEnv = "WASMPY_RESIDENT_WARM"
