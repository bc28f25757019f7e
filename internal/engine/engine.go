// Package wasm runs Python jobs in CPython compiled to WebAssembly, under
// wazero: it compiles the interpreter once, starts every run in a fresh
// instance with its own limits, and says how each run ended.
//
// It knows nothing of skills, LLMs or HTTP: capabilities arrive as a
// hostfuncs.Table per run.
//
//	e, err := wasm.New(ctx, wasm.Config{Interpreter: interp, CacheDir: dir})
//	defer e.Close(ctx)
//	out, err := e.Run(ctx, &wasm.Run{Code: "print(6*7)"})
package engine

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"

	"github.com/wasmpy/wasmpy/assets"
	"github.com/wasmpy/wasmpy/hostfuncs"
	"github.com/wasmpy/wasmpy/internal/pyhost"
)

// Defaults for the zero values of Run's limits.
const (
	DefaultMemoryLimit = 256 << 20
	DefaultOutputLimit = 4 << 20
	NoOutputLimit      = -1
)

// Config says which interpreter an Engine runs.
type Config struct {
	Interpreter *assets.Interpreter
	// Unmetered runs the interpreter as built, without fuel instrumentation:
	// runs then report no fuel and Run.Fuel is refused. For measuring what
	// metering costs.
	Unmetered bool
	// CacheDir keeps compiled code and snapshot images across processes;
	// "" disables both.
	CacheDir string
	// Site, when not nil, is mounted read-only as the guest's
	// site-packages (packages.SiteDir) and put on sys.path.
	Site fs.FS
	// SiteKey identifies Site's contents (say, the SHA-256s of the package
	// sets it merges): snapshot images are kept per key.
	SiteKey string
	// Preload are modules every run finds imported: the core build
	// imports them before its snapshot, so a run pays nothing for them.
	Preload []string
	// ImageTimeout and ImageMemory bound making the snapshot image, which
	// runs the preloads and the package sets' .pth lines: 0 means
	// MaxImageTimeout and DefaultMemoryLimit. Past either, New fails with
	// a *PreloadError.
	ImageTimeout time.Duration
	ImageMemory  uint64
	// Engine runs the interpreter: Wazero ("" too) or Wasmtime, which only
	// a binary built with the wasmtime tag has (see Engines).
	Engine string
}

// MaxImageTimeout is the longest making a snapshot image may take.
const MaxImageTimeout = 2 * time.Minute

// Engine holds one compiled interpreter; it is safe for concurrent Runs.
type Engine struct {
	interp  *assets.Interpreter
	metered bool
	name    string    // Wazero or Wasmtime
	alt     altEngine // the engine when not wazero (seam.go)
	rt      wazero.Runtime
	mod     wazero.CompiledModule
	mounts  wazero.FSConfig // the standard library's and the site's
	site    siteConfig

	// The core build starts every run from image, the memory of an
	// interpreter that has run its initialisation. Its module is compiled
	// without the data segments (initialise writes them itself). An
	// instance waits, parked, for the next run (see parked.go).
	image *image
	key   string // imageKey of image
	// imageTimeout and imageMemory bound making the image (Config).
	imageTimeout time.Duration
	imageMemory  uint64
	// base is the image mapped for reading, once a session needs it.
	baseOnce sync.Once
	base     []byte
	baseErr  error
	nextMu   sync.Mutex
	next     chan parkResult
	spare    chan blankResult // the blank instance for the next session turn

	aheadMu     sync.Mutex
	ahead       []ahead // instances started from states, oldest first
	aheadClosed bool
	starting    sync.WaitGroup // parkAhead's starts in progress

	// alive ends (kill) when Close begins: it stops every instance and
	// refuses new runs. Runs hold runs for reading; Close takes it to wait
	// for them.
	alive context.Context
	kill  context.CancelCauseFunc
	runs  sync.RWMutex
	// lingering counts the parked instances not closed yet: a stopped
	// run's may still be unwinding after the run has returned.
	lingering sync.WaitGroup
}

// New compiles the interpreter (or loads it from the cache) and, for the
// core build, initialises it once to make the snapshot image.
func New(ctx context.Context, cfg Config) (*Engine, error) {
	if cfg.Interpreter == nil {
		return nil, errors.New("wasmpy: no interpreter")
	}
	if err := CheckEngine(cfg.Engine); err != nil {
		return nil, err
	}
	site := siteConfig{fs: cfg.Site, key: cfg.SiteKey, preload: slices.Concat(cfg.Interpreter.Preload, cfg.Preload)}
	if err := site.validate(); err != nil {
		return nil, err
	}
	if cfg.Engine == Wasmtime && cfg.Interpreter.Kind != assets.Core {
		return nil, fmt.Errorf("wasmpy: the wasmtime engine runs the core build only, not the %s interpreter", cfg.Interpreter.Kind)
	}
	e := &Engine{interp: cfg.Interpreter, metered: !cfg.Unmetered, site: site,
		imageTimeout: MaxImageTimeout, imageMemory: DefaultMemoryLimit,
		key: imageKey(cfg.Interpreter, site.key, strings.Join(site.preload, ","))}
	if cfg.ImageTimeout > 0 {
		e.imageTimeout = min(cfg.ImageTimeout, MaxImageTimeout)
	}
	if cfg.ImageMemory > 0 {
		e.imageMemory = min(cfg.ImageMemory, maxMemory)
	}
	e.alive, e.kill = context.WithCancelCause(context.Background())
	if cfg.Engine == Wasmtime {
		e.name = Wasmtime
		alt, err := newWasmtime(ctx, e, cfg)
		if err != nil {
			e.kill(err)
			return nil, err
		}
		e.alt = alt
		return e, nil
	}
	// Debug info would have wazero parse DWARF for every trap and exit.
	// A metered instance stops, when its context is done, at its next
	// refuel (see meter); only an unmetered one needs wazero's checks.
	rc := wazero.NewRuntimeConfig().WithCloseOnContextDone(cfg.Unmetered).WithDebugInfoEnabled(false)
	if cfg.CacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(filepath.Join(cfg.CacheDir, "compiled"))
		if err != nil {
			e.kill(err)
			return nil, fmt.Errorf("wasmpy: compilation cache: %w", err)
		}
		rc = rc.WithCompilationCache(cache)
	}
	e.name, e.rt = Wazero, wazero.NewRuntimeWithConfig(ctx, rc)
	if err := e.start(ctx, cfg.CacheDir); err != nil {
		e.kill(err)
		e.rt.Close(ctx)
		return nil, err
	}
	return e, nil
}

func (e *Engine) start(ctx context.Context, cacheDir string) error {
	stdlib, err := stdlibFS(e.interp.Stdlib)
	if err != nil {
		return err
	}
	e.mounts = e.site.mount(stdlib)
	if err := instantiateHostModules(ctx, e.rt); err != nil {
		return err
	}
	wasm, err := e.prepare(cacheDir)
	if err != nil {
		return err
	}
	mod, err := e.rt.CompileModule(ctx, wasm)
	if err != nil {
		return fmt.Errorf("wasmpy: compile interpreter: %w", err)
	}
	// The host functions read and write the guest's memory: a module
	// without one (hence none exported) is no interpreter.
	if len(mod.ExportedMemories()) == 0 {
		return errors.New("wasmpy: the interpreter exports no memory")
	}
	e.mod = mod
	if e.interp.Kind == assets.Core {
		if err := e.snapshot(ctx, cacheDir); err != nil {
			return err
		}
		e.next = e.parkNext()
	}
	return nil
}

// Name is the engine that runs the interpreter: Wazero or Wasmtime.
func (e *Engine) Name() string { return e.name }

// Close releases the runtime and everything compiled in it.
func (e *Engine) Close(ctx context.Context) error {
	e.kill(errClosed)
	if e.alt != nil {
		e.runs.Lock()
		defer e.runs.Unlock()
		if e.base != nil && e.image != nil && e.image.fd >= 0 {
			unmap(e.base)
		}
		return e.alt.close() // closes the image
	}
	e.stopAhead()
	e.stopParking()
	e.runs.Lock()
	defer e.runs.Unlock()
	e.lingering.Wait() // kill has stopped them; their memory goes with the runtime
	err := e.rt.Close(ctx)
	if e.image != nil {
		if e.base != nil && e.image.fd >= 0 {
			unmap(e.base)
		}
		closeImage(e.image)
	}
	return err
}

// Run describes one job.
type Run struct {
	Code     string
	Filename string   // shown in tracebacks; "" means "<string>"
	Args     []string // sys.argv[1:]
	// Module, instead of Code, names a module to run as __main__ (python -m).
	Module string
	// Interactive reads and runs statements from stdin after the code, as
	// python3 -i does: the REPL.
	Interactive bool
	// Stdin is read as the guest asks for it; nil: the guest reads EOF.
	Stdin io.Reader
	// Stdout and Stderr, when set, get the guest's output as it writes it,
	// beside the Outcome's capture, in the order the guest wrote them
	// (its stdout is buffered and flushed often: see interrupter).
	Stdout, Stderr io.Writer
	// Interrupt raises KeyboardInterrupt in the guest, once per value
	// received, as SIGINT does in python3.
	Interrupt <-chan struct{}

	Timeout     time.Duration // 0: only ctx bounds the run
	MemoryLimit uint64        // bytes of linear memory; 0: DefaultMemoryLimit
	// OutputLimit is the most a stream may carry before the run is stopped
	// (KindOutput): 0 means DefaultOutputLimit, or no limit for a stream
	// with a writer; NoOutputLimit means none. The Outcome keeps the first
	// OutputLimit bytes, or DefaultOutputLimit of a stream with a writer.
	OutputLimit int
	Fuel        uint64 // compute budget; 0: unlimited
	// Deterministic pins what would make two runs differ: the guest sees a
	// fake clock and a seeded random source.
	Deterministic bool

	// Session makes the run a turn of a session: its __main__ is the one
	// the turn it starts from left (a new one for the first), and the
	// Outcome carries the memory it leaves behind (see Outcome.State).
	Session bool
	// From is the state a session's turn starts from; nil: the image.
	From *State

	Host hostfuncs.Table // capabilities granted to this run
	// FS is the file system the guest sees at / (workspace.Workspace's
	// SysFS), given the run's clock for the times it records; nil: none.
	FS func(now func() int64) experimentalsys.FS
	// App is the program's files, mounted read-only at AppMount and put
	// first on sys.path; with no Code or Module, its __main__.py runs, as
	// python3 DIR does. nil: AppMount is empty.
	App          fs.FS
	AllowImports []string // nil: any module; else the only top-level modules the code may import
}

// The kinds of Failure: a closed set.
const (
	KindSyntax    = "syntax"
	KindException = "exception"
	KindExit      = "exit"
	KindTimeout   = "timeout"
	KindMemory    = "memory"
	KindOutput    = "output"
	KindFuel      = "fuel"
	KindInternal  = "internal"
	// KindInterrupted: a KeyboardInterrupt nobody caught, or a run stopped
	// from outside (its context canceled).
	KindInterrupted = "interrupted"
)

// Failure says why a run did not succeed.
type Failure struct {
	Kind      string `json:"kind"`
	Type      string `json:"type,omitempty"` // the Python exception class, for exceptions
	Message   string `json:"message"`
	Traceback string `json:"traceback,omitempty"`
	Line      int    `json:"line,omitempty"` // for syntax errors
}

func (f *Failure) Error() string {
	if f.Type != "" {
		return fmt.Sprintf("wasmpy: %s: %s: %s", f.Kind, f.Type, f.Message)
	}
	return fmt.Sprintf("wasmpy: %s: %s", f.Kind, f.Message)
}

// Outcome is how a run ended.
type Outcome struct {
	ExitCode        int
	Stdout, Stderr  []byte
	StdoutTruncated bool
	StderrTruncated bool
	Failure         *Failure // nil on success
	Duration        time.Duration
	MemoryPeak      uint64
	FuelUsed        uint64
	HostCalls       []HostCall
	HostCallsTotal  int // may exceed len(HostCalls), which is capped
	// State is the memory a session's turn left behind, when the session
	// moves on to it: the turn's code ran to its end, or to an exception,
	// a syntax error or an exit it raised itself. A turn the host stopped
	// (timeout, fuel, memory, output, interrupted, internal failure) or
	// that left the interpreter mid-call (os._exit, abort) has none: the
	// session stays at the state it began from.
	State *State
}

// Key identifies the engine's image: a State applies only to an engine of
// its key. It changes with the interpreter, its standard library, the
// site's package sets, the preloaded modules and the runner.
func (e *Engine) Key() string { return e.key }

// keeps says whether a session moves on to the state a turn left: see
// Outcome.State.
func keeps(f *Failure) bool {
	return f == nil || f.Kind == KindException || f.Kind == KindSyntax || f.Kind == KindExit
}

// report is what the guest's runner says of the user's code.
type report struct {
	Status    string `json:"status"` // ok, exit, syntax, exception
	ExitCode  int    `json:"exit_code"`
	Type      string `json:"type"`
	Message   string `json:"message"`
	Traceback string `json:"traceback"`
	Line      int    `json:"line"`
}

// job is what the runner receives. The source is not in it: the wasmpy
// build fetches it raw with the _source host call (see runState.serve),
// the plain WASI build, which has no host call, gets it in base64.
type job struct {
	SourceBase64 []byte   `json:"source_base64,omitempty"`
	Filename     string   `json:"filename"`
	Argv         []string `json:"argv"`
	Capabilities []string `json:"capabilities"`
	AllowImports []string `json:"allow_imports"`
	Nonce        string   `json:"nonce,omitempty"`
	Module       string   `json:"module,omitempty"`
	Interactive  bool     `json:"interactive,omitempty"`
	Banner       bool     `json:"banner,omitempty"`   // a REPL with nothing to run first
	App          string   `json:"app,omitempty"`      // where the program is mounted, when it is
	AppMain      bool     `json:"app_main,omitempty"` // run the program's __main__.py
	Session      bool     `json:"session,omitempty"`
}

// argv0 is sys.argv[0] for a script named filename: as in CPython, '-c'
// for code given as a string and '-' for code read from stdin.
func argv0(filename string) string {
	switch filename {
	case "<string>":
		return "-c"
	case "<stdin>":
		return "-"
	}
	return filename
}

// ErrForeignState is Run's error for a State made by an engine with
// another image (see Engine.Key).
var ErrForeignState = errors.New("wasmpy: the session state was made for another interpreter, standard library, package sets or preload")

var (
	errOutput      = errors.New("output limit exceeded")
	errInterrupted = errors.New("interrupted, and this interpreter cannot raise KeyboardInterrupt")
)

// Run executes one job in a fresh instance. The error is for the host's own
// failures (a canceled ctx, a broken engine); the guest's are in Outcome.
func (e *Engine) Run(ctx context.Context, r *Run) (*Outcome, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r.OutputLimit < NoOutputLimit {
		return nil, fmt.Errorf("wasmpy: negative output limit %d", r.OutputLimit)
	}
	e.runs.RLock()
	defer e.runs.RUnlock()
	if e.alive.Err() != nil {
		return nil, errClosed
	}
	if (r.Session || r.From != nil) && e.interp.Kind != assets.Core {
		return nil, errors.New("wasmpy: sessions need the core interpreter build")
	}
	if r.From != nil && r.From.key != e.key {
		return nil, ErrForeignState
	}
	if r.Fuel > 0 && !e.metered {
		return nil, errors.New("wasmpy: a fuel limit needs a metered engine")
	}
	if r.Fuel > math.MaxInt64 {
		return nil, fmt.Errorf("wasmpy: fuel limit %d exceeds %d", r.Fuel, int64(math.MaxInt64))
	}
	memLimit := r.MemoryLimit
	if memLimit == 0 {
		memLimit = DefaultMemoryLimit
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(e.alive, func() { cancel(errClosed) })()
	if r.Timeout > 0 {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeout(runCtx, r.Timeout)
		defer stop()
	}
	full := func() { cancel(errOutput) }

	filename := r.Filename
	if filename == "" {
		filename = "<string>"
	}
	appMain := r.App != nil && r.Code == "" && r.Module == ""
	j := job{Filename: filename, Argv: append([]string{argv0(filename)}, r.Args...),
		Module: r.Module, Interactive: r.Interactive, Banner: r.Interactive && r.Code == "" && r.Module == "" && !appMain,
		Capabilities: r.Host.Names(), AllowImports: r.AllowImports, Session: r.Session}
	if r.App != nil {
		j.App, j.AppMain = AppMount, appMain
		if appMain {
			j.Argv[0] = AppMount // as python3 DIR has DIR
		}
	}
	if e.interp.Kind != assets.Core {
		j.SourceBase64, j.Nonce = []byte(r.Code), nonce()
	}
	stderrStream := r.Stderr
	if j.Nonce != "" && stderrStream != nil {
		stderrStream = &reportCut{w: stderrStream, nonce: []byte(j.Nonce)}
	}
	stdout, stderr := r.output(r.Stdout, full), r.output(stderrStream, full)
	jobJSON, err := json.Marshal(j)
	if err != nil {
		return nil, fmt.Errorf("wasmpy: job: %w", err)
	}
	var st *runState
	var mem *memory
	var p *parked
	if e.alt != nil {
		if st, err = e.alt.next(r.From, memLimit, r.Fuel > 0); err != nil {
			return nil, err
		}
	} else if e.interp.Kind == assets.Core {
		if r.From != nil {
			var ok bool
			if p, ok = e.takeAhead(r.From); !ok {
				p, err = e.sessionInstance(r.From)
			}
		} else {
			p, err = e.parked()
		}
		if err != nil {
			return nil, err
		}
		st, mem = p.st, p.mem
	} else {
		st, mem = newRunState(e.newMeter()), &memory{limit: memLimit}
	}
	st.bind(runCtx, r, jobJSON, stdout, stderr)
	if p == nil && e.alt == nil {
		close(st.ready) // no parked runner waits for it, but a _job call must not
	}
	st.intr.stop = func() { cancel(errInterrupted) }
	if r.Interrupt != nil {
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for {
				select {
				case <-r.Interrupt:
					st.intr.raise()
				case <-stop:
					return
				}
			}
		}()
	}
	budget := int64(math.MaxInt64)
	if r.Fuel > 0 {
		budget = int64(r.Fuel)
	}
	if deadline, ok := runCtx.Deadline(); ok {
		st.meter.until(deadline, func() { cancel(context.DeadlineExceeded) })
	}
	start := time.Now()
	var runErr error
	ret := int32(-1) // the runner's result, where there is a runner
	if e.alt != nil {
		var ar altRun
		ar, runErr = e.alt.run(runCtx, st, memLimit, budget, r.Session)
		defer ar.release()
		mem, ret = ar.mem, ar.ret
	} else if p != nil {
		defer p.close()
		if runErr = p.run(runCtx, memLimit, budget); runErr == nil {
			ret = p.ret // written by the runner, which has ended (not so when left to stop)
		}
	} else {
		ctx := experimental.WithMemoryAllocator(context.WithValue(runCtx, stateKey{}, st), mem)
		runErr = e.runCommand(ctx, e.moduleConfig(st), string(jobJSON), st.meter, budget)
	}
	outBytes, outCut := stdout.seal()
	errBytes, errCut := stderr.seal()
	out := &Outcome{
		Duration:        time.Since(start),
		Stdout:          outBytes,
		Stderr:          errBytes,
		StdoutTruncated: outCut,
		StderrTruncated: errCut,
		MemoryPeak:      mem.peak.Load(),
		FuelUsed:        st.meter.used(),
	}
	rep, calls, total := st.results()
	out.HostCalls, out.HostCallsTotal = calls, total
	if j.Nonce != "" {
		out.Stderr, rep = cutReport(out.Stderr, j.Nonce)
	}
	e.classify(out, r, runCtx, runErr, rep, mem, st.meter, stdout.limit)
	if r.Session && runErr == nil && ret == 0 && keeps(out.Failure) {
		if out.State, err = e.capture(mem, r.From); err != nil {
			return nil, err
		}
	}
	switch {
	case e.alt != nil: // its turns lay their instances when they come
	case out.State != nil:
		e.parkAhead(out.State)
	case r.From != nil: // the session stays where it was
		e.parkAhead(r.From)
	}
	return out, nil
}

// moduleConfig gives an instance its streams, clocks and random source
// through st, so that a parked instance learns them when its job arrives.
func (e *Engine) moduleConfig(st *runState) wazero.ModuleConfig {
	cfg := wazero.NewModuleConfig().WithName("").
		WithWalltime(func() (int64, int32) { return st.clock.walltime() }, 1).
		WithNanotime(func() int64 { return st.clock.nanotime() }, 1).
		WithRandSource(readerFunc(func(p []byte) (int, error) { return st.random.Read(p) })).
		WithStdin(readerFunc(st.readStdin)).
		WithStdout(writerFunc(func(p []byte) (int, error) { return st.stdout.Write(p) })).
		WithStderr(writerFunc(func(p []byte) (int, error) { return st.stderr.Write(p) })).
		WithEnv("PYTHONHASHSEED", "0").WithEnv("PYTHONDONTWRITEBYTECODE", "1")
	mounts := e.mounts.(sysfs.FSConfig).WithSysFSMount(boundFS{st: st}, filesMount)
	mounts = mounts.(sysfs.FSConfig).WithSysFSMount(boundFS{st: st, app: true}, AppMount)
	cfg = cfg.WithFSConfig(mounts)
	if e.interp.Kind == assets.Core {
		cfg = cfg.WithArgs("python").WithStartFunctions()
	}
	return cfg
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// runCommand runs a plain WASI build: python -c <bootstrap> <job>.
func (e *Engine) runCommand(ctx context.Context, cfg wazero.ModuleConfig, jobJSON string, meter *meter, budget int64) error {
	cfg = cfg.WithArgs("python", "-c", pyhost.Bootstrap(e.site.prelude()+pyhost.CommandMain), jobJSON).WithStartFunctions()
	m, err := e.rt.InstantiateModule(ctx, e.mod, cfg)
	if err != nil {
		return err
	}
	defer m.Close(ctx)
	if st := stateFrom(ctx); st != nil {
		st.intr.in, st.intr.ctx = wazeroInstance{m}, ctx
	}
	meter.start(m, budget)
	defer meter.stop()
	_, err = call(ctx, m, "_start")
	return err
}

// newMeter is nil for an unmetered engine: a nil meter measures nothing.
func (e *Engine) newMeter() *meter {
	if !e.metered {
		return nil
	}
	return &meter{}
}

// classify fills in ExitCode and Failure. What the host saw decides the
// limit outcomes: the output cap, the deadline, the fuel budget and the
// memory limit (a growth the host refused, in a run that did not then end
// well). The guest's report only describes how its code ended; it can
// neither claim a limit nor hide one, and when it is missing, or disagrees
// with the exit status the host saw, the host's view wins.
func (e *Engine) classify(out *Outcome, r *Run, ctx context.Context, runErr error, rep *report, mem *memory, meter *meter, outLimit int64) {
	var exit *sys.ExitError
	exited := errors.As(runErr, &exit)
	if rep != nil && exited && int(exit.ExitCode()) != rep.status() {
		rep = nil // the code exited itself, past or around the runner
	}
	ended := rep != nil && rep.status() == 0 && (runErr == nil || exited)
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errOutput):
		out.Failure = &Failure{Kind: KindOutput, Message: fmt.Sprintf("output limit of %s reached: the run was stopped", sizeText(uint64(outLimit)))}
	case errors.Is(cause, context.DeadlineExceeded) && r.Timeout > 0:
		out.Failure = &Failure{Kind: KindTimeout, Message: "timed out after " + r.Timeout.String()}
	case errors.Is(cause, context.DeadlineExceeded):
		out.Failure = &Failure{Kind: KindTimeout, Message: "timed out: the caller's deadline passed"}
	case ctx.Err() != nil && !errors.Is(cause, errClosed):
		// The caller canceled the run (or interrupted an interpreter that
		// cannot raise KeyboardInterrupt): cause says why.
		out.Failure = &Failure{Kind: KindInterrupted, Message: "stopped: " + cause.Error()}
	case meter.exhausted() && runErr != nil:
		out.Failure = &Failure{Kind: KindFuel, Message: fmt.Sprintf("fuel budget of %d units exhausted", meter.budget)}
	case mem.refused.Load() && !ended:
		out.Failure = &Failure{Kind: KindMemory, Message: fmt.Sprintf("memory limit of %s reached", sizeText(mem.limit))}
		if rep != nil && rep.Status == KindException {
			out.Failure.Type, out.Failure.Traceback = rep.Type, rep.Traceback
		}
	case rep != nil:
		out.ExitCode = rep.status()
		switch rep.Status {
		case "ok", "exit":
			if out.ExitCode != 0 {
				out.Failure = &Failure{Kind: KindExit, Message: fmt.Sprintf("exit status %d", out.ExitCode)}
			}
		case KindException:
			if rep.Type == "KeyboardInterrupt" {
				out.Failure = &Failure{Kind: KindInterrupted, Type: rep.Type, Message: "KeyboardInterrupt", Traceback: rep.Traceback}
				out.ExitCode = ExitCode(KindInterrupted)
				return
			}
			fallthrough
		case KindSyntax:
			out.Failure = &Failure{Kind: rep.Status, Type: rep.Type, Message: rep.Message, Traceback: rep.Traceback, Line: rep.Line}
		default:
			// Only the code can have written it (the runner writes the
			// statuses above): its exception, never the sandbox's crash.
			out.Failure = &Failure{Kind: KindException, Type: rep.Type, Message: fmt.Sprintf("the script's report has an unknown status %q", rep.Status), Traceback: rep.Traceback}
		}
		return
	case exited: // os._exit, or a fatal signal the guest raised itself
		out.ExitCode = int(min(exit.ExitCode(), 255))
		if out.ExitCode != 0 {
			out.Failure = &Failure{Kind: KindExit, Message: fmt.Sprintf("exit status %d", out.ExitCode)}
		}
		return
	case runErr != nil && strings.HasPrefix(runErr.Error(), "wasm error: unreachable"):
		// abort(), from os.abort or a fatal error, is a wasm trap; python3
		// would die of SIGABRT, which a shell reports as 134.
		out.ExitCode = 128 + 6
		out.Failure = &Failure{Kind: KindExit, Message: "the interpreter aborted (exit status 134)"}
		return
	case runErr != nil:
		out.Failure = &Failure{Kind: KindInternal, Message: "the interpreter failed: " + firstLine(runErr)}
	default:
		// The runner ended without its report: the code broke the report
		// path (the traceback, if any, is on stderr). It failed as an
		// uncaught exception does.
		out.ExitCode = 1
		out.Failure = &Failure{Kind: KindException, Message: "the script ended without a report of how (see stderr)"}
		return
	}
	out.ExitCode = ExitCode(out.Failure.Kind)
}

// maxReportText bounds each text of a report: the runner cuts its own to
// 64 KiB; a report forged by the code is cut here.
const maxReportText = 1 << 16

// bound cuts the report's texts to maxReportText bytes, at a rune boundary.
func (r *report) bound() {
	for _, s := range []*string{&r.Status, &r.Type, &r.Message, &r.Traceback} {
		if len(*s) > maxReportText {
			*s = strings.ToValidUTF8((*s)[:maxReportText], "") + "... (cut)"
		}
	}
}

// status is the exit status the report stands for.
func (r *report) status() int {
	switch r.Status {
	case "ok":
		return 0
	case "exit":
		return r.ExitCode & 0xFF
	}
	return 1
}

// firstLine is err's message without the wasm (or Go) stack trace wazero
// appends: those name host internals and help no user.
func firstLine(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return strings.TrimSuffix(msg, " (recovered by wazero)")
}

// ExitCode is the process status that stands for a sandbox outcome; for
// the script's own outcomes it is what the script exited with.
func ExitCode(kind string) int {
	switch kind {
	case KindTimeout:
		return 124
	case KindFuel:
		return 123
	case KindOutput:
		return 122
	case KindMemory:
		return 121
	case KindInternal:
		return 120
	case KindInterrupted:
		return 130 // 128 + SIGINT, as python3
	}
	return 1
}

// cutReport takes the runner's report (the line after nonce) off stderr.
func cutReport(stderr []byte, nonce string) ([]byte, *report) {
	i := bytes.LastIndex(stderr, []byte(nonce))
	if i < 0 {
		return stderr, nil
	}
	var rep report
	if err := json.Unmarshal(bytes.TrimSpace(stderr[i+len(nonce):]), &rep); err != nil {
		return stderr, nil
	}
	stderr = stderr[:i]
	return bytes.TrimSuffix(stderr, []byte("\n")), &rep
}

func nonce() string {
	var b [16]byte
	rand.Read(b[:])
	return fmt.Sprintf("\x1ewasmpy-report-%x:", b)
}

// output makes one of the run's streams: see OutputLimit.
func (r *Run) output(w io.Writer, full func()) *output {
	limit := int64(r.OutputLimit)
	if limit == 0 {
		limit = DefaultOutputLimit
		if w != nil {
			limit = NoOutputLimit
		}
	}
	keep := int64(math.MaxInt)
	if limit >= 0 {
		keep = limit
	}
	if w != nil {
		keep = min(keep, DefaultOutputLimit)
	}
	return &output{w: w, keep: int(keep), limit: limit, full: full}
}

// sizeText writes n bytes as people do: 64 MiB, 1.5 GiB, 100 B.
func sizeText(n uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i, f := 0, float64(n)
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", f), "0"), ".") + " " + units[i]
}
