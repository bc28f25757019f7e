package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/assets"
	"github.com/wasmpy/wasmpy/internal/resident"
)

// The resident is a per-user process that keeps the interpreter compiled
// and its image mapped, so that `wasmpy exec` hands it the run instead of
// loading them itself: the CLI then costs a process start and a fresh
// instance. It is a build daemon's shape: a Unix socket in a directory
// only its user can enter, peer credentials checked on both ends, an idle
// exit, and a fallback to running in-process whenever it cannot serve a
// run identically. Each run still gets a fresh instance (Sandbox.Run):
// nothing passes from one run to the next. handoff.go is the client's side.

const (
	defaultIdle = 15 * time.Minute
	// maxSandboxes bounds the configurations (interpreter, package sets,
	// workspace, LLM...) the resident keeps loaded at once.
	maxSandboxes = 4
	// warmEnv carries the configuration the resident loads as it starts:
	// that of the run whose client started it.
	warmEnv = "WASMPY_RESIDENT_WARM"
	// requestWait bounds the wait for a client's request once it connects.
	requestWait = 30 * time.Second
)

func residentCommand() *cli.Command {
	idle := &cli.DurationFlag{Name: "idle", Value: defaultIdle, EnvVars: []string{"WASMPY_RESIDENT_IDLE"},
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

// residentStatus is what `wasmpy resident status` shows.
type residentStatus struct {
	PID       int           `json:"pid"`
	Started   time.Time     `json:"started"`
	Runs      int           `json:"runs"`
	Active    int           `json:"active"`
	Sandboxes int           `json:"sandboxes"`
	Idle      time.Duration `json:"idle"`
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
	s := &server{binary: binary, idle: c.Duration("idle"), ln: ln, started: time.Now(), last: time.Now(),
		sandboxes: map[string]*loaded{}}
	if warm := os.Getenv(warmEnv); warm != "" {
		os.Unsetenv(warmEnv)
		var w wireConfig
		if json.Unmarshal([]byte(warm), &w) == nil {
			s.release(s.get(w))
		}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		if _, ok := <-sigs; ok {
			s.retire()
		}
	}()
	s.serve()
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
func ask(op string) (*reply, error) {
	_, binary, socket, _, err := residentPaths()
	if err != nil {
		return nil, err
	}
	conn, err := resident.Dial(socket)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := conn.Send(request{Binary: binary, Op: op}); err != nil {
		return nil, err
	}
	var rep reply
	if _, err := conn.Recv(&rep); err != nil {
		return nil, err
	}
	if rep.Fallback == fallbackStale {
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
func defaultWire(c *cli.Context) wireConfig {
	var w wireConfig
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

// server is the resident: it accepts clients until it is idle for idle,
// or retired (stopped, stale, signalled), then finishes its runs.
type server struct {
	binary  string
	idle    time.Duration
	ln      *resident.Listener
	started time.Time
	wg      sync.WaitGroup

	mu        sync.Mutex
	active    int
	runs      int
	last      time.Time
	retired   bool
	timer     *time.Timer
	sandboxes map[string]*loaded
}

// loaded is a sandbox for one configuration, loading or loaded.
type loaded struct {
	key   string
	files string // resident.Identity of the interpreter's and package sets' files
	ready chan struct{}
	sb    *wasmpy.Sandbox
	err   error
	users int
	used  time.Time
	gone  bool // out of the cache: closed once its last user is done
}

func (s *server) serve() {
	s.mu.Lock()
	s.timer = time.AfterFunc(s.idle, s.idleCheck)
	s.mu.Unlock()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			if s.isRetired() {
				break
			}
			time.Sleep(10 * time.Millisecond) // out of descriptors, say: try again
			continue
		}
		s.mu.Lock()
		s.active++
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.done()
			s.handle(conn)
		}()
	}
	s.wg.Wait() // the runs; a load still in progress (a FIFO, say) ends with the process
}

func (s *server) done() {
	s.mu.Lock()
	s.active--
	s.last = time.Now()
	s.timer.Reset(s.idle)
	s.mu.Unlock()
	s.wg.Done()
}

func (s *server) idleCheck() {
	s.mu.Lock()
	quiet := s.active == 0 && time.Since(s.last) >= s.idle
	if !quiet && s.active == 0 {
		s.timer.Reset(s.idle - time.Since(s.last))
	}
	s.mu.Unlock()
	if quiet {
		s.retire()
	}
}

// retire stops accepting clients and gives up the socket, so that another
// resident can start while this one finishes its runs.
func (s *server) retire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.retired {
		s.retired = true
		s.ln.Close()
	}
}

func (s *server) isRetired() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.retired
}

func (s *server) handle(conn *resident.Conn) {
	defer conn.Close()
	// A client sends its request as it connects: one that does not (stopped,
	// say) must not keep the resident from its idle exit.
	conn.SetReadDeadline(time.Now().Add(requestWait))
	var req request
	files, err := conn.Recv(&req)
	defer closeFiles(files)
	if errors.Is(err, resident.ErrTooLarge) { // refused on its header, before it was read
		conn.Send(reply{Fallback: strings.TrimPrefix(oneLine(err), "wasmpy: ")})
		return
	}
	if err != nil {
		return
	}
	conn.SetReadDeadline(time.Time{})
	if req.Binary != s.binary {
		s.retire() // first, so that the client can start the new one
		conn.Send(reply{Fallback: fallbackStale})
		return
	}
	switch req.Op {
	case "run":
		if req.Run == nil || len(files) != 3 {
			conn.Send(reply{Fallback: "a run without its job or its three streams"})
			return
		}
		s.run(conn, req.Run, files[0], files[1], files[2])
	case "status":
		conn.Send(reply{Status: s.status()})
	case "stop":
		s.retire()
		conn.Send(reply{})
	default:
		conn.Send(reply{Fallback: fmt.Sprintf("unknown request %q", req.Op)})
	}
}

func (s *server) status() *residentStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &residentStatus{PID: os.Getpid(), Started: s.started, Runs: s.runs, Active: s.active - 1, // not this request
		Sandboxes: len(s.sandboxes), Idle: s.idle}
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// get returns the sandbox for w, loading it unless it is loaded already
// from the same files; the caller releases it.
func (s *server) get(w wireConfig) *loaded {
	key, _ := jsonString(w)
	cfg := w.config()
	paths, err := assets.Files(assets.Options{Select: cfg.Interpreter, CacheDir: cfg.CacheDir})
	files := resident.Identity(append(paths, cfg.Packages...)...)
	if err != nil {
		files = err.Error()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.sandboxes[key]
	if l != nil && l.files != files { // the interpreter or a package set changed: load it again
		s.drop(l)
		l = nil
	}
	if l == nil {
		l = &loaded{key: key, files: files, ready: make(chan struct{})}
		s.sandboxes[key] = l
		go func() {
			l.sb, l.err = wasmpy.New(context.Background(), cfg)
			if l.err != nil {
				s.mu.Lock()
				s.drop(l)
				s.mu.Unlock()
			}
			close(l.ready)
		}()
	}
	l.users++
	l.used = time.Now()
	s.evict()
	return l
}

// release ends a use of l.
func (s *server) release(l *loaded) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l.users--
	if l.gone && l.users == 0 {
		closeLoaded(l)
	}
}

// drop takes l out of the cache; s.mu is held.
func (s *server) drop(l *loaded) {
	if s.sandboxes[l.key] == l {
		delete(s.sandboxes, l.key)
	}
	if !l.gone {
		l.gone = true
		if l.users == 0 {
			closeLoaded(l)
		}
	}
}

// evict drops the least recently used sandboxes nobody uses, past
// maxSandboxes; s.mu is held.
func (s *server) evict() {
	var idle []*loaded
	for _, l := range s.sandboxes {
		if l.users == 0 {
			idle = append(idle, l)
		}
	}
	slices.SortFunc(idle, func(a, b *loaded) int { return a.used.Compare(b.used) })
	for i := 0; len(s.sandboxes) > maxSandboxes && i < len(idle); i++ {
		s.drop(idle[i])
	}
}

func closeLoaded(l *loaded) {
	go func() {
		<-l.ready
		if l.sb != nil {
			l.sb.Close(context.Background())
		}
	}()
}

// message is err as an exitError's message, which run prefixes with "wasmpy: ".
func message(err error) string { return strings.TrimPrefix(oneLine(err), "wasmpy: ") }

func jsonString(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
