// Package wasmpy runs untrusted Python in CPython compiled to WebAssembly,
// hosted by wazero: fast, isolated, and with nothing ambient. A run sees its
// code, its arguments, its stdin and the capabilities the host grants, and
// nothing else of the host: no environment, no files, no network.
//
//	sb, err := wasmpy.New(ctx, wasmpy.Config{})
//	if err != nil { ... }
//	defer sb.Close(ctx)
//	res, err := sb.Run(ctx, wasmpy.Job{Code: "print(6*7)"})
//	fmt.Print(res.Stdout) // 42
//
// A Sandbox compiles the interpreter once and is safe for concurrent use;
// every Run starts in a fresh instance, so no state passes between runs.
package wasmpy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wasmpy/wasmpy/assets"
	"github.com/wasmpy/wasmpy/hostfuncs"
	"github.com/wasmpy/wasmpy/wasm"
)

// Limits bound a run. A zero field means the sandbox's default.
type Limits struct {
	Timeout time.Duration // wall clock; default 30s
	Memory  uint64        // bytes of guest memory; default 256 MiB
	Output  int           // bytes kept per stream (stdout, stderr); default 4 MiB
	// Fuel is a deterministic compute budget (see the README); 0 means
	// unlimited. A metered run sees a fixed clock and random seed, so the
	// same job spends the same fuel on any machine.
	Fuel uint64
}

// DefaultLimits apply where neither the Job nor the Config sets a limit.
var DefaultLimits = Limits{Timeout: 30 * time.Second, Memory: wasm.DefaultMemoryLimit, Output: wasm.DefaultOutputLimit}

// Or returns l with its zero fields taken from d: the limits a job runs
// with are job.Limits.Or(config.Limits).Or(DefaultLimits).
func (l Limits) Or(d Limits) Limits {
	if l.Timeout == 0 {
		l.Timeout = d.Timeout
	}
	if l.Memory == 0 {
		l.Memory = d.Memory
	}
	if l.Output == 0 {
		l.Output = d.Output
	}
	if l.Fuel == 0 {
		l.Fuel = d.Fuel
	}
	return l
}

func (l Limits) validate() error {
	switch {
	case l.Timeout < 0:
		return fmt.Errorf("wasmpy: negative timeout %v", l.Timeout)
	case l.Output < 0:
		return fmt.Errorf("wasmpy: negative output limit %d", l.Output)
	}
	return nil
}

// Config configures a Sandbox. The zero value is a working sandbox with the
// best installed interpreter and no capabilities beyond computing.
type Config struct {
	// Interpreter selects the interpreter: "" (the best installed), "wasmpy",
	// "npm", or a path (see assets.Options).
	Interpreter string
	// CacheDir holds interpreters and compiled code; "" means the user cache dir.
	CacheDir string
	// Limits are the defaults for every job.
	Limits Limits
	// AllowImports, when not nil, are the only top-level modules a job's code
	// may import; importing anything else raises ImportError in the guest.
	AllowImports []string

	// Workspace bounds every run's workspace; its Stable dir is the default
	// for jobs that name none.
	Workspace hostfuncs.WorkspaceConfig
	// LLM is the endpoint ask_llm calls; with no BaseURL, ask_llm raises
	// LLMError in the guest.
	LLM hostfuncs.LLMConfig
	// LLMBudget bounds ask_llm per run.
	LLMBudget hostfuncs.LLMBudget
	// Disable lists built-in capabilities no run gets (see Capabilities).
	Disable []string
	// HostFuncs are capabilities of the embedder's own, added to every run.
	// A name that is also built in replaces the built-in.
	HostFuncs hostfuncs.Table
}

// Capabilities are the built-in host functions every run gets unless
// Config.Disable names them.
var Capabilities = []string{"read_file", "write_file", "list_files", "search_files", "ask_llm", "submit_result"}

// Sandbox runs jobs. Create one with New and reuse it; Close it when done.
type Sandbox struct {
	cfg    Config
	interp *assets.Interpreter
	engine *wasm.Engine
	llm    *hostfuncs.LLM
}

// New loads and compiles the interpreter. The first call on a machine may
// take seconds; later processes reuse the compiled code from the cache.
func New(ctx context.Context, cfg Config) (*Sandbox, error) {
	if err := cfg.Limits.validate(); err != nil {
		return nil, err
	}
	for _, name := range cfg.Disable {
		if !slices.Contains(Capabilities, name) {
			return nil, fmt.Errorf("wasmpy: Disable: no built-in capability %q (have %s)", name, strings.Join(Capabilities, ", "))
		}
	}
	cache := cfg.CacheDir
	if cache == "" {
		var err error
		if cache, err = assets.DefaultCacheDir(); err != nil {
			return nil, err
		}
	}
	interp, err := assets.Load(assets.Options{Select: cfg.Interpreter, CacheDir: cache})
	if err != nil {
		return nil, err
	}
	engine, err := wasm.New(ctx, wasm.Config{Interpreter: interp, CacheDir: filepath.Join(cache, "engine")})
	if err != nil {
		return nil, err
	}
	return &Sandbox{cfg: cfg, interp: interp, engine: engine, llm: hostfuncs.NewLLM(cfg.LLM)}, nil
}

// Close releases the compiled interpreter.
func (s *Sandbox) Close(ctx context.Context) error { return s.engine.Close(ctx) }

// Interpreter describes the interpreter the sandbox runs.
func (s *Sandbox) Interpreter() InterpreterInfo {
	return InterpreterInfo{Kind: s.interp.Kind, Version: s.interp.Version, SHA256: s.interp.SHA256}
}

// InterpreterInfo identifies an interpreter, for provenance.
type InterpreterInfo struct {
	Kind    string `json:"kind"`
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
}

// Job is one piece of code to run.
type Job struct {
	Code     string
	Filename string   // the script's name in tracebacks and sys.argv[0]; default "<string>"
	Args     []string // sys.argv[1:]
	Stdin    []byte   // nil: the script reads EOF
	Limits   Limits   // zero fields: the sandbox's limits
	// Workspace is the stable (read-only) directory of this run's workspace;
	// "" means Config.Workspace.Stable.
	Workspace string
	// ResultSchema, when set, is a JSON Schema the value given to
	// submit_result must match.
	ResultSchema json.RawMessage
}

// ErrNoCode is returned for a Job without code.
var ErrNoCode = errors.New("wasmpy: job has no code")

// Run executes job in a fresh instance and reports how it went. The error
// is for the host's own problems (bad job, canceled ctx); everything the
// guest did, including failing, is in the Result.
func (s *Sandbox) Run(ctx context.Context, job Job) (*Result, error) {
	if job.Code == "" {
		return nil, ErrNoCode
	}
	if err := job.Limits.validate(); err != nil {
		return nil, err
	}
	lim := job.Limits.Or(s.cfg.Limits).Or(DefaultLimits)
	caps, err := s.capabilities(job)
	if err != nil {
		return nil, err
	}
	out, err := s.engine.Run(ctx, &wasm.Run{
		Code: job.Code, Filename: job.Filename, Args: job.Args, Stdin: job.Stdin,
		Timeout: lim.Timeout, MemoryLimit: lim.Memory, OutputLimit: lim.Output, Fuel: lim.Fuel,
		Deterministic: lim.Fuel > 0, Host: caps.table, AllowImports: s.cfg.AllowImports,
	})
	if err != nil {
		return nil, err
	}
	res := newResult(out)
	if v, ok := caps.result.Value(); ok {
		var compact bytes.Buffer
		if json.Compact(&compact, v) == nil { // the sink has checked it is JSON
			res.Result = compact.Bytes()
		}
	}
	res.Files = caps.workspace.Changes()
	res.LLM = caps.llm.Usage()
	res.workspace = caps.workspace
	return res, nil
}

// runCapabilities are one run's host functions and their state.
type runCapabilities struct {
	table     hostfuncs.Table
	workspace *hostfuncs.Workspace
	result    *hostfuncs.ResultSink
	llm       *hostfuncs.LLMSession
}

func (s *Sandbox) capabilities(job Job) (*runCapabilities, error) {
	wcfg := s.cfg.Workspace
	if job.Workspace != "" {
		wcfg.Stable = job.Workspace
	}
	ws, err := hostfuncs.NewWorkspace(wcfg)
	if err != nil {
		return nil, err
	}
	sink, err := hostfuncs.NewResultSink(job.ResultSchema)
	if err != nil {
		return nil, err
	}
	c := &runCapabilities{table: hostfuncs.Table{}, workspace: ws, result: sink, llm: s.llm.Session(s.cfg.LLMBudget)}
	ws.Register(c.table)
	sink.Register(c.table)
	c.llm.Register(c.table)
	for _, name := range s.cfg.Disable {
		delete(c.table, name)
	}
	for name, fn := range s.cfg.HostFuncs {
		c.table.Add(name, fn)
	}
	return c, nil
}
