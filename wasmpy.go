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
// A run can call only the capabilities it is granted (Job.Grants); one
// Sandbox serves jobs with different grants.
package wasmpy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/wasmpy/wasmpy/assets"
	"github.com/wasmpy/wasmpy/hostfuncs"
	"github.com/wasmpy/wasmpy/internal/engine"
	"github.com/wasmpy/wasmpy/llm"
	"github.com/wasmpy/wasmpy/packages"
	"github.com/wasmpy/wasmpy/workspace"
)

// Limits bound a run. A zero field means the sandbox's default.
type Limits struct {
	Timeout time.Duration // wall clock; default 30s
	Memory  uint64        // bytes of guest memory; default 256 MiB
	// Output is the most a stream (stdout, stderr) may carry before the
	// run stops (KindOutput); NoOutputLimit means none. Result keeps that
	// much of each. Default: 4 MiB; a stream the Job also sends to a
	// writer has no limit by default, and Result keeps its first 4 MiB.
	Output int
	// Fuel is a deterministic compute budget (see the README); 0 means
	// unlimited. A metered run sees a fixed clock and random seed, so the
	// same job spends the same fuel on any machine.
	Fuel uint64
}

// The largest limits a run may ask for; Run and New refuse more.
const (
	MaxMemory = 4 << 30       // the wasm32 address space
	MaxFuel   = math.MaxInt64 // what the meter counts in
)

// NoOutputLimit, as Limits.Output, lets a run write without limit.
const NoOutputLimit = engine.NoOutputLimit

// DefaultLimits are the limits where neither the Job nor the Config sets
// one; a Job that streams its output (Stdout, Stderr) has no Output limit
// by default.
func DefaultLimits() Limits {
	return Limits{Timeout: 30 * time.Second, Memory: engine.DefaultMemoryLimit, Output: engine.DefaultOutputLimit}
}

// Limits combine in two ways, and only these two (see Or and Within): Or
// fills what is left unset from defaults, where nobody asked for anything;
// Within bounds what someone asked for by what another allows, the lower
// value field by field. Whoever decides for someone else (a service's tier,
// a token's maximum, an operator's ceiling) combines with Within, never Or:
// a request can then lower a limit, never raise it.

// Or returns l with its zero fields taken from d: defaults, not bounds.
// The limits a job runs with are job.Limits.Or(config.Limits).Or(DefaultLimits())
// (Sandbox.RunLimits).
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

// Within returns l bounded by ceil, field by field: each limit is the lower
// of l's and ceil's. A field that sets no bound (zero; for Output also
// NoOutputLimit, for Fuel zero is unmetered) loses to one that does, so a
// bound on either side holds; where neither sets one, l's stays. It never
// raises a limit of l's, and a.Within(b).Within(c) == a.Within(b.Within(c)).
func (l Limits) Within(ceil Limits) Limits {
	lower := func(v, c int64) int64 {
		if c > 0 && (v <= 0 || c < v) {
			return c
		}
		return v
	}
	lowerU := func(v, c uint64) uint64 {
		if c > 0 && (v == 0 || c < v) {
			return c
		}
		return v
	}
	l.Timeout = time.Duration(lower(int64(l.Timeout), int64(ceil.Timeout)))
	l.Memory = lowerU(l.Memory, ceil.Memory)
	l.Output = int(lower(int64(l.Output), int64(ceil.Output)))
	l.Fuel = lowerU(l.Fuel, ceil.Fuel)
	return l
}

// Validate reports a limit wasmpy cannot enforce: a negative one, or one past
// MaxMemory or MaxFuel. New and Run call it.
func (l Limits) Validate() error {
	switch {
	case l.Timeout < 0:
		return fmt.Errorf("wasmpy: negative timeout %v", l.Timeout)
	case l.Output < NoOutputLimit:
		return fmt.Errorf("wasmpy: negative output limit %d", l.Output)
	case l.Memory > MaxMemory:
		return fmt.Errorf("wasmpy: memory limit %d exceeds %d (the wasm32 address space)", l.Memory, uint64(MaxMemory))
	case l.Fuel > MaxFuel:
		return fmt.Errorf("wasmpy: fuel limit %d exceeds %d", l.Fuel, uint64(MaxFuel))
	}
	return nil
}

// Config configures a Sandbox. The zero value is a working sandbox with the
// best installed interpreter that grants no capabilities: its runs compute,
// print and read their stdin, and nothing else.
type Config struct {
	// Interpreter selects the interpreter: "" (the best installed), "core"
	// (our build; "wasmpy" is its former name, still accepted), "sci" (core
	// with numpy), "npm", or a path (see assets.Options).
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
	Workspace workspace.Config
	// LLM is the endpoint ask_llm calls; with no BaseURL, ask_llm raises
	// LLMError in the guest.
	LLM llm.Config
	// LLMBudget bounds ask_llm per run.
	LLMBudget hostfuncs.LLMBudget
	// HTTP is what http_request may reach, for the runs granted it (and
	// whose Job.HTTP is nil). The zero value reaches no host.
	HTTP hostfuncs.HTTPPolicy
	// HostFuncs are capabilities of the embedder's own, each granted like a
	// built-in by its name (Capability("price")). A name must be a Python
	// identifier not starting with "_"; one that is also built in replaces
	// the built-in for the runs granted it.
	HostFuncs hostfuncs.Table
	// Grants are capabilities every job gets, on top of its Job.Grants.
	// Default: none.
	Grants []Capability
	// Packages are package sets (files `wasmpy pkg build` writes) every run
	// can import from: merged, read-only, into the guest's site-packages.
	// A set that fails its checks fails New with a *packages.Error.
	Packages []string
	// Preload are modules (from the standard library or the sets) the
	// interpreter imports before its snapshot, so a run pays nothing to
	// import them.
	Preload []string
	// Sessions bound the sandbox's sessions (see NewSession).
	Sessions SessionLimits
	// SessionKey seals saved sessions and deltas (Session.Save, SaveDelta)
	// with HMAC-SHA256 under this key, and RestoreSession and ApplyDelta
	// refuse one not sealed under it (ErrSessionSeal): so whoever can write
	// a saved session but does not hold the key cannot craft the guest
	// memory it restores. Nil seals with a plain SHA-256, which catches
	// damage only: for a store no one else writes. The CLI keeps a key per
	// user (see README, "Sessions").
	SessionKey []byte
	// Engine runs the interpreter: "wazero" (pure Go; "" means it) or
	// "wasmtime" (Cranelift through cgo, faster on CPU-bound code; only in
	// a binary built with `-tags wasmtime`, see Engines).
	Engine string
	// MaxConcurrent bounds the runs (and session turns) in progress at
	// once; the rest wait for a slot, as long as their ctx allows, before
	// their own timeout starts (Result.QueuedMS says how long). 0 means
	// runtime.NumCPU(); negative, no bound (for a caller that admits runs
	// itself). A run waiting on its stdin or a host call holds its slot.
	MaxConcurrent int
}

// Engines lists the engines this binary can run (Config.Engine), the
// default first.
func Engines() []string { return engine.Engines() }

// ErrNoWasmtime is New's error for Config.Engine "wasmtime" in a binary
// built without the wasmtime tag.
var ErrNoWasmtime = engine.ErrNoWasmtime

// CheckEngine reports an engine name this binary cannot run (Config.Engine):
// an unknown one, or wasmtime in a binary built without it.
func CheckEngine(name string) error { return engine.CheckEngine(name) }

// Sandbox runs jobs. Create one with New and reuse it; Close it when done.
type Sandbox struct {
	cfg    Config
	sets   []PackageSet
	dists  []packages.Distribution // of every set: the requirements allowlist
	interp *assets.Interpreter
	engine *engine.Engine
	llm    *llm.Client
	closed atomic.Bool
	admit  admission

	sessions sessions
}

// New loads and compiles the interpreter. The first call on a machine may
// take seconds; later processes reuse the compiled code from the cache.
func New(ctx context.Context, cfg Config) (*Sandbox, error) {
	if err := cfg.Limits.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Sessions.validate(); err != nil {
		return nil, err
	}
	if err := engine.CheckEngine(cfg.Engine); err != nil {
		return nil, err
	}
	if err := checkMaxConcurrent(cfg.MaxConcurrent); err != nil {
		return nil, err
	}
	if err := checkHostFuncs(cfg.HostFuncs); err != nil {
		return nil, err
	}
	if err := cfg.checkGrants("Config.Grants", cfg.Grants); err != nil {
		return nil, err
	}
	if err := cfg.HTTP.Validate(); err != nil {
		return nil, err
	}
	cfg.HTTP.Hosts, cfg.HTTP.Schemes, cfg.HTTP.Methods = slices.Clone(cfg.HTTP.Hosts), slices.Clone(cfg.HTTP.Schemes), slices.Clone(cfg.HTTP.Methods)
	cfg.HostFuncs, cfg.Grants = maps.Clone(cfg.HostFuncs), slices.Clone(cfg.Grants) // the caller's may change
	cfg.Packages, cfg.Preload = slices.Clone(cfg.Packages), slices.Clone(cfg.Preload)
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
	site, sets, dists, err := mountPackages(cfg.Packages)
	if err != nil {
		return nil, err
	}
	for _, d := range interp.Packages {
		dists = append(dists, packages.Distribution{Name: d.Name, Version: d.Version, Input: "interpreter"})
	}
	// Making the image runs the preloads and the sets' .pth lines: it is
	// bounded by the sandbox's limits, as a run is.
	imageLimits := cfg.Limits.Or(DefaultLimits())
	eng, err := engine.New(ctx, engine.Config{Interpreter: interp, CacheDir: filepath.Join(cache, "engine"),
		Site: site, SiteKey: setsKey(sets), Preload: cfg.Preload,
		ImageTimeout: imageLimits.Timeout, ImageMemory: imageLimits.Memory, Engine: cfg.Engine})
	if err != nil {
		var pe *engine.PreloadError
		if errors.As(err, &pe) {
			return nil, &PreloadError{Line: pe.Line}
		}
		return nil, err
	}
	return &Sandbox{cfg: cfg, sets: sets, dists: dists, interp: interp, engine: eng, llm: llm.New(cfg.LLM),
		admit: newAdmission(cfg.MaxConcurrent), sessions: sessions{limits: cfg.Sessions.Or(DefaultSessionLimits())}}, nil
}

// Close releases the compiled interpreter; runs in progress end, and later
// ones fail with ErrClosed.
func (s *Sandbox) Close(ctx context.Context) error {
	s.closed.Store(true)
	err := s.engine.Close(ctx) // ends the turns in progress
	s.closeSessions()
	return err
}

// Interpreter describes the interpreter the sandbox runs.
func (s *Sandbox) Interpreter() InterpreterInfo {
	return InterpreterInfo{Kind: s.interp.Kind, Version: s.interp.Version, SHA256: s.interp.SHA256, Engine: s.engine.Name()}
}

// InterpreterInfo identifies an interpreter, and the engine that runs it,
// for provenance.
type InterpreterInfo struct {
	Kind    string `json:"kind"`
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
	Engine  string `json:"engine,omitempty"` // wazero or wasmtime
}

// Job is one piece of code to run.
type Job struct {
	Code string
	// Filename is the script's name in tracebacks and sys.argv[0]; default
	// "<string>", whose argv[0] is '-c' as in CPython ('-' for "<stdin>").
	Filename string
	Args     []string // sys.argv[1:]
	// Module, instead of Code, names a module to run as __main__, as
	// python3 -m does.
	Module string
	// Interactive runs a REPL over Stdin after the code (or module, or
	// nothing), as python3 -i does, until EOF or exit().
	Interactive bool
	// Stdin is what the script reads, as it asks for it; nil: EOF. A Read
	// still waiting when the run ends is left behind (its bytes lost).
	Stdin io.Reader
	// Stdout and Stderr, when set, receive what the script writes to its
	// stdout and stderr as it writes it (the Result keeps a copy: see
	// Limits.Output). Writes come in the order the script made them, from
	// the goroutine running the job: a slow writer slows the run, and one
	// that fails gets nothing more.
	Stdout, Stderr io.Writer
	// Interrupt raises KeyboardInterrupt in the script, once per value it
	// receives, as SIGINT does in python3. To stop a run at once, cancel
	// its context: Run then returns what the run did so far, of
	// KindInterrupted.
	Interrupt <-chan struct{}
	Limits    Limits // zero fields: the sandbox's limits
	// App is a multi-file program's files (an OpenApp, or any fs.FS, such
	// as generated files in memory), mounted read-only at AppMount and
	// first on sys.path, as python3 puts a script's directory there: Code
	// (whose Filename then names its file under AppMount, say
	// "/app/main.py") and Module import from it. With neither, the run
	// executes its __main__.py, as `python3 DIR` does, with sys.argv[0]
	// AppMount. nil: nothing there (AppMount is an empty directory).
	App fs.FS
	// Workspace is the stable (read-only) directory of this run's workspace;
	// "" means Config.Workspace.Stable.
	Workspace string
	// DetachFiles, for a session's turn, leaves the workspace's files out
	// of the state the session keeps (its /tmp stays): what the turn's
	// overlay holds (the files it wrote, the paths it removed, and any the
	// session had) is the caller's, from the Result (Files, File,
	// Removed), to carry into Workspace. A front end whose workspace is a directory of
	// its own sets it on every turn, so that no stale copy in the session
	// hides what that directory holds now. A plain run ignores it.
	DetachFiles bool
	// ResultSchema, when set, is a JSON Schema the value given to
	// submit_result must match.
	ResultSchema json.RawMessage
	// Grants are the capabilities this run may call, on top of
	// Config.Grants; nothing else is reachable. A built-in not granted
	// raises PermissionError in the guest; an embedder's function not
	// granted does not exist there. Default: none.
	Grants []Capability
	// HTTP, when not nil, replaces Config.HTTP for this run: what
	// http_request (which Grants must include) may reach.
	HTTP *hostfuncs.HTTPPolicy
	// AllowImports, when not nil, are the only top-level modules this
	// job's code may import, within Config.AllowImports when that is set
	// too (a module must be in both).
	AllowImports []string
	// Tier names the trust tier (package tiers) whose policy the job's
	// limits, grants and imports come from; it is reported in the Result
	// and changes nothing else.
	Tier string
}

// Run executes job in a fresh instance and reports how it went. The error
// is for the host's own problems (a bad job, a ctx canceled before the run
// began); everything the guest did, including failing or being stopped,
// is in the Result.
func (s *Sandbox) Run(ctx context.Context, job Job) (*Result, error) {
	return s.run(ctx, job, nil)
}

// turn is what a session's turn starts from and, when the session moves
// on, what it leaves: run fills in next.
type turn struct {
	from *sessionState
	next *sessionState
}

func (s *Sandbox) run(ctx context.Context, job Job, t *turn) (*Result, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if job.Code == "" && job.Module == "" && !job.Interactive && job.App == nil {
		return nil, ErrNoCode
	}
	if err := checkApp(job); err != nil {
		return nil, err
	}
	if err := job.Limits.Validate(); err != nil {
		return nil, err
	}
	lim := s.RunLimits(job.Limits)
	if job.Limits.Output == 0 && s.cfg.Limits.Output == 0 && (job.Stdout != nil || job.Stderr != nil) {
		lim.Output = 0 // the engine's default for a stream: none, and a capped capture
	}
	queued, release, err := s.admit.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	caps, err := s.capabilities(job)
	if err != nil {
		return nil, err
	}
	var from *engine.State
	if t != nil {
		from = t.from.mem
		if err := caps.workspace.Restore(t.from.overlay); err != nil {
			caps.workspace.Close()
			return nil, err
		}
	}
	out, err := s.engine.Run(ctx, &engine.Run{Session: t != nil, From: from,
		Code: job.Code, Filename: job.Filename, Args: job.Args, Module: job.Module, Interactive: job.Interactive, Stdin: job.Stdin,
		Stdout: job.Stdout, Stderr: job.Stderr, Interrupt: job.Interrupt,
		Timeout: lim.Timeout, MemoryLimit: lim.Memory, OutputLimit: lim.Output, Fuel: lim.Fuel,
		Deterministic: lim.Fuel > 0, Host: caps.table, AllowImports: allowImports(s.cfg.AllowImports, job.AllowImports),
		FS: caps.workspace.SysFS, App: job.App,
	})
	caps.workspace.Close()
	caps.http.Close()
	if err != nil {
		if s.closed.Load() {
			return nil, ErrClosed
		}
		if errors.Is(err, engine.ErrForeignState) {
			return nil, ErrForeignSession
		}
		return nil, err
	}
	if t != nil && out.State != nil {
		ov := caps.workspace.Overlay()
		if job.DetachFiles {
			ov.Workspace = workspace.OverlayTree{}
		}
		t.next = &sessionState{mem: out.State, overlay: ov}
	}
	res := newResult(out)
	res.QueuedMS = float64(queued) / float64(time.Millisecond)
	res.Tier = job.Tier
	res.Engine = s.engine.Name()
	res.Packages = slices.Clone(s.sets)
	if v, ok := caps.result.Value(); ok {
		var compact bytes.Buffer
		if json.Compact(&compact, v) == nil { // the sink has checked it is JSON
			res.Output = compact.Bytes()
		}
	}
	res.Files = caps.workspace.Changes()
	res.LLM = caps.llm.Usage()
	res.HTTP = caps.http.Records()
	res.workspace = caps.workspace
	res.Images = images(res)
	return res, nil
}

// RunLimits are the limits a job asking for asked runs with:
// asked.Or(Config.Limits).Or(DefaultLimits()), what a record of the run
// reports. (A job that streams its output and sets no Output limit gets
// none, and keeps a capped capture.)
func (s *Sandbox) RunLimits(asked Limits) Limits {
	return asked.Or(s.cfg.Limits).Or(DefaultLimits())
}

// allowImports is the import policy of a run: the modules both lists allow,
// where each that is not nil restricts.
func allowImports(cfg, job []string) []string {
	switch {
	case job == nil:
		return cfg
	case cfg == nil:
		return job
	}
	both := []string{}
	for _, m := range job {
		if slices.Contains(cfg, m) {
			both = append(both, m)
		}
	}
	return both
}

// runCapabilities are one run's host functions and their state.
type runCapabilities struct {
	table     hostfuncs.Table
	workspace *workspace.Workspace
	result    *hostfuncs.ResultSink
	llm       *hostfuncs.LLMSession
	http      *hostfuncs.HTTP
}

// capabilities builds the table of what job is granted, and nothing else:
// the guest cannot call, or learn the name of, anything left out.
func (s *Sandbox) capabilities(job Job) (*runCapabilities, error) {
	if err := s.cfg.checkGrants("Job.Grants", job.Grants); err != nil {
		return nil, err
	}
	policy := s.cfg.HTTP
	if job.HTTP != nil {
		if err := job.HTTP.Validate(); err != nil {
			return nil, err
		}
		policy = *job.HTTP
	}
	wcfg := s.cfg.Workspace
	if job.Workspace != "" {
		wcfg.Stable = job.Workspace
	}
	ws, err := workspace.New(wcfg)
	if err != nil {
		return nil, err
	}
	sink, err := hostfuncs.NewResultSink(job.ResultSchema)
	if err != nil {
		return nil, err
	}
	c := &runCapabilities{table: hostfuncs.Table{}, workspace: ws, result: sink, llm: hostfuncs.NewLLMSession(s.llm, s.cfg.LLMBudget),
		http: hostfuncs.NewHTTP(policy)}
	all := hostfuncs.Table{}
	c.http.Register(all)
	ws.Register(all)
	sink.Register(all)
	c.llm.Register(all)
	maps.Copy(all, s.cfg.HostFuncs) // an embedder's function replaces a built-in of its name
	for _, g := range slices.Concat(s.cfg.Grants, job.Grants) {
		c.table.Add(string(g), all[string(g)])
	}
	return c, nil
}
