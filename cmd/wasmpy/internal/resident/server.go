package resident

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/assets"
	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
)

// The resident is a per-user process that keeps the interpreter compiled
// and its image mapped, so that `wasmpy exec` hands it the run instead of
// loading them itself: the CLI then costs a process start and a fresh
// instance. It is a build daemon's shape: a Unix socket in a directory
// only its user can enter, peer credentials checked on both ends, an idle
// exit, and a fallback to running in-process whenever it cannot serve a
// run identically. Each run still gets a fresh instance (Sandbox.Run):
// nothing passes from one run to the next. The CLI's side is
// cmd/wasmpy/handoff.go; the command that starts a Server is
// cmd/wasmpy/resident.go.

// DefaultIdle is how long a resident waits for a run before it exits.
const DefaultIdle = 15 * time.Minute

const (
	// maxSandboxes bounds the configurations (interpreter, package sets,
	// workspace, LLM...) the resident keeps loaded at once.
	maxSandboxes = 4
	// requestWait bounds the wait for a client's request once it connects.
	requestWait = 30 * time.Second
)

// Server is the resident: it accepts clients until it is idle for its idle
// time, or retired (stopped, stale, signalled), then finishes its runs.
type Server struct {
	binary  string
	idle    time.Duration
	ln      *Listener
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

// NewServer returns the resident for the clients of binary (Binary()) on
// ln, which exits after idle without a run.
func NewServer(ln *Listener, binary string, idle time.Duration) *Server {
	return &Server{binary: binary, idle: idle, ln: ln, started: time.Now(), last: time.Now(), sandboxes: map[string]*loaded{}}
}

// Warm loads the sandbox for c ahead of the first run that asks for it.
func (s *Server) Warm(c Config) { s.release(s.get(c)) }

// Serve accepts clients until the server retires, then waits for its runs.
func (s *Server) Serve() {
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

func (s *Server) done() {
	s.mu.Lock()
	s.active--
	s.last = time.Now()
	s.timer.Reset(s.idle)
	s.mu.Unlock()
	s.wg.Done()
}

func (s *Server) idleCheck() {
	s.mu.Lock()
	quiet := s.active == 0 && time.Since(s.last) >= s.idle
	if !quiet && s.active == 0 {
		s.timer.Reset(s.idle - time.Since(s.last))
	}
	s.mu.Unlock()
	if quiet {
		s.Retire()
	}
}

// Retire stops accepting clients and gives up the socket, so that another
// resident can start while this one finishes its runs.
func (s *Server) Retire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.retired {
		s.retired = true
		s.ln.Close()
	}
}

func (s *Server) isRetired() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.retired
}

func (s *Server) handle(conn *Conn) {
	defer conn.Close()
	// A client sends its request as it connects: one that does not (stopped,
	// say) must not keep the resident from its idle exit.
	conn.SetReadDeadline(time.Now().Add(requestWait))
	var req Request
	files, err := conn.Recv(&req)
	defer closeFiles(files)
	if errors.Is(err, ErrTooLarge) { // refused on its header, before it was read
		conn.Send(Reply{Fallback: strings.TrimPrefix(console.OneLine(err), "wasmpy: ")})
		return
	}
	if err != nil {
		return
	}
	conn.SetReadDeadline(time.Time{})
	if req.Binary != s.binary {
		s.Retire() // first, so that the client can start the new one
		conn.Send(Reply{Fallback: FallbackStale})
		return
	}
	switch req.Op {
	case "run":
		if req.Run == nil || len(files) != 3 {
			conn.Send(Reply{Fallback: "a run without its job or its three streams"})
			return
		}
		s.run(conn, req.Run, files[0], files[1], files[2])
	case "status":
		conn.Send(Reply{Status: s.status()})
	case "stop":
		s.Retire()
		conn.Send(Reply{})
	default:
		conn.Send(Reply{Fallback: fmt.Sprintf("unknown request %q", req.Op)})
	}
}

func (s *Server) status() *Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &Status{PID: os.Getpid(), Started: s.started, Runs: s.runs, Active: s.active - 1, // not this request
		Sandboxes: len(s.sandboxes), Idle: s.idle}
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// get returns the sandbox for w, loading it unless it is loaded already
// from the same files; the caller releases it.
func (s *Server) get(w Config) *loaded {
	key, _ := jsonString(w)
	cfg := w.Sandbox()
	paths, err := assets.Files(assets.Options{Select: cfg.Interpreter, CacheDir: cfg.CacheDir})
	files := Identity(append(paths, cfg.Packages...)...)
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
func (s *Server) release(l *loaded) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l.users--
	if l.gone && l.users == 0 {
		closeLoaded(l)
	}
}

// drop takes l out of the cache; s.mu is held.
func (s *Server) drop(l *loaded) {
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
func (s *Server) evict() {
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

func jsonString(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
