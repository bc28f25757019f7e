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
	"context"
	"errors"
	"fmt"
	"path/filepath"
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
}

// DefaultLimits apply where neither the Job nor the Config sets a limit.
var DefaultLimits = Limits{Timeout: 30 * time.Second, Memory: wasm.DefaultMemoryLimit, Output: wasm.DefaultOutputLimit}

// or returns l with its zero fields taken from d.
func (l Limits) or(d Limits) Limits {
	if l.Timeout == 0 {
		l.Timeout = d.Timeout
	}
	if l.Memory == 0 {
		l.Memory = d.Memory
	}
	if l.Output == 0 {
		l.Output = d.Output
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
	// may import.
	AllowImports []string
	// HostFuncs are capabilities added to every run, beside the built-in ones.
	HostFuncs hostfuncs.Table
}

// Sandbox runs jobs. Create one with New and reuse it; Close it when done.
type Sandbox struct {
	cfg    Config
	interp *assets.Interpreter
	engine *wasm.Engine
}

// New loads and compiles the interpreter. The first call on a machine may
// take seconds; later processes reuse the compiled code from the cache.
func New(ctx context.Context, cfg Config) (*Sandbox, error) {
	if err := cfg.Limits.validate(); err != nil {
		return nil, err
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
	engine, err := wasm.New(ctx, wasm.Config{Interpreter: interp, CacheDir: filepath.Join(cache, "wazero")})
	if err != nil {
		return nil, err
	}
	return &Sandbox{cfg: cfg, interp: interp, engine: engine}, nil
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
	lim := job.Limits.or(s.cfg.Limits).or(DefaultLimits)
	host := hostfuncs.Table{}
	for name, fn := range s.cfg.HostFuncs {
		host.Add(name, fn)
	}
	out, err := s.engine.Run(ctx, &wasm.Run{
		Code: job.Code, Filename: job.Filename, Args: job.Args, Stdin: job.Stdin,
		Timeout: lim.Timeout, MemoryLimit: lim.Memory, OutputLimit: lim.Output,
		Host: host, AllowImports: s.cfg.AllowImports,
	})
	if err != nil {
		return nil, err
	}
	return newResult(out), nil
}
