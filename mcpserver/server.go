// Package mcpserver serves wasmpy to agents over the Model Context
// Protocol, with the official Go SDK. It is a front end like the HTTP
// service: it runs code through the same runs.Executor (provenance) and
// runs.Admission (slots, queue, request timeout), so both share limits,
// records and error codes.
//
// Tools: run_python (code, limits, input files → stdout, stderr, output,
// error kind, files written; output streams as progress notifications),
// write_file, read_file and list_files on a workspace private to the MCP
// session, and every loaded skill, whose input and output schemas are the
// tool's.
//
//	srv, err := mcpserver.New(ctx, mcpserver.Config{Executor: ex, Registry: reg})
//	defer srv.Close()
//	err = srv.Run(ctx, &mcp.StdioTransport{})   // wasmpy mcp
//	http.Handle("/mcp", srv.Handler())          // wasmpy serve --mcp
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/skills"
	"github.com/wasmpy/wasmpy/workspace"
)

// DefaultSessionTimeout closes an MCP session over HTTP that has been idle
// this long, and drops its workspace.
const DefaultSessionTimeout = 30 * time.Minute

// Config configures a Server.
type Config struct {
	// Executor runs the code and the skills, and records their provenance.
	Executor *runs.Executor
	// Registry is the skills served as tools; it may still be loading
	// (skills.Start): each skill becomes a tool once the registry is done,
	// and clients are told the tool list changed. nil serves no skills.
	Registry *skills.Registry
	// Admission bounds the runs; share the HTTP service's so both front
	// ends share its limits. nil means one with the defaults.
	Admission *runs.Admission
	// ExecLimits bound run_python; a call may ask for less.
	ExecLimits wasmpy.Limits
	// SkillsOnly serves the skills alone: no run_python and no workspace
	// tools, for a server that runs only vetted code (as the HTTP service
	// does without EnableExec).
	SkillsOnly bool
	// Workspace bounds each session's workspace (MaxFileBytes,
	// MaxOverlayBytes as the total, MaxFiles); its Stable is ignored.
	Workspace workspace.Config
	// SessionTimeout closes idle sessions over HTTP; 0 means
	// DefaultSessionTimeout.
	SessionTimeout time.Duration
	// Budgets bound the MCP sessions over HTTP and their workspaces, in
	// all and per caller (the token the HTTP service authenticated); zero
	// fields: DefaultBudgets.
	Budgets Budgets
	// Version is the server version clients see.
	Version string
	// Logger gets the host's own failures; nil logs nothing.
	Logger *slog.Logger
}

// Server is the MCP server; create it with New and Close it when done.
type Server struct {
	cfg   Config
	adm   *runs.Admission
	mcp   *mcp.Server
	log   *slog.Logger
	about string // what the sandbox offers, for tool descriptions
	tmp   string // holds the sessions' workspaces

	mu     sync.Mutex
	conns  map[*mcp.ServerSession]*conn
	closed bool

	http httpSessions // the MCP sessions over HTTP: whose each is, and the ceilings
	ws   workspaceBudget
}

// New checks cfg, learns what the sandbox offers (one short run), and
// registers the tools.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Executor == nil {
		return nil, errors.New("mcpserver: Config needs an Executor")
	}
	if err := cfg.ExecLimits.Validate(); err != nil {
		return nil, fmt.Errorf("mcpserver: ExecLimits: %w", err)
	}
	if cfg.Workspace.MaxFileBytes < 0 || cfg.Workspace.MaxOverlayBytes < 0 || cfg.Workspace.MaxFiles < 0 {
		return nil, errors.New("mcpserver: Workspace limits must not be negative")
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	adm := cfg.Admission
	if adm == nil {
		var err error
		if adm, err = runs.NewAdmission(runs.AdmissionConfig{}); err != nil {
			return nil, err
		}
	}
	about, err := describeSandbox(ctx, cfg.Executor, cfg.ExecLimits)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "wasmpy-mcp-")
	if err != nil {
		return nil, fmt.Errorf("mcpserver: %w", err)
	}
	cfg.Budgets = cfg.Budgets.or(DefaultBudgets())
	s := &Server{cfg: cfg, adm: adm, log: cfg.Logger, about: about, tmp: tmp, conns: map[*mcp.ServerSession]*conn{}}
	s.ws.global, s.ws.perCaller = cfg.Budgets.Workspaces, cfg.Budgets.WorkspacesPerCaller
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	version := cfg.Version
	if version == "" {
		version = "dev"
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "wasmpy", Title: "wasmpy: a Python sandbox", Version: version}, &mcp.ServerOptions{
		Instructions: instructions(about, cfg.SkillsOnly),
		Logger:       s.log,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	if !cfg.SkillsOnly {
		s.addRunTool()
		s.addFileTools()
		s.addSessionTools()
	}
	if cfg.Registry != nil {
		s.addSkills(ctx, cfg.Registry)
	}
	return s, nil
}

// Run serves one client over t (&mcp.StdioTransport{} for stdio) until it
// disconnects or ctx is done.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error { return s.mcp.Run(ctx, t) }

// Connect serves one client over t in the background, for callers (and
// tests) that manage the session themselves.
func (s *Server) Connect(ctx context.Context, t mcp.Transport) (*mcp.ServerSession, error) {
	return s.mcp.Connect(ctx, t, nil)
}

// Handler serves the streamable HTTP transport (POST, GET and DELETE on
// one path). Put it behind the caller's own authentication, which hands
// the caller on in the request's context (runs.WithCaller, as the HTTP
// service does): an MCP session belongs to the caller that opened it (any
// other gets 404, as for a session that does not exist), its runs get that
// caller's tier, and Config.Budgets bound the sessions each caller opens.
func (s *Server) Handler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{SessionTimeout: s.cfg.SessionTimeout, Logger: s.log})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet { // a stream the server keeps open: no write deadline
			http.NewResponseController(w).SetWriteDeadline(time.Time{})
		}
		s.serveHTTP(h, w, r)
	})
}

// Close drops every MCP session's workspace and sandbox sessions.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for _, c := range conns {
		s.drop(c)
	}
	return os.RemoveAll(s.tmp)
}

// conn is what the server keeps for one MCP session: who it is (the
// caller that opened it), its workspace (made on first use) and the
// sandbox sessions it opened, all dropped when it ends.
type conn struct {
	// caller is the MCP session's: over HTTP the token that opened it,
	// over stdio the zero Caller (the local user); its Scope makes its
	// sandbox sessions its own, which no other MCP session can name.
	caller   runs.Caller
	mu       sync.Mutex
	files    *files
	sessions map[string]bool
}

// conn returns the state of the MCP session a call came from.
func (s *Server) conn(ss *mcp.ServerSession) (*conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("mcpserver: closed")
	}
	if c, ok := s.conns[ss]; ok {
		return c, nil
	}
	caller, err := s.http.callerOf(ss.ID())
	if err != nil {
		return nil, err
	}
	caller.Scope = "mcp/" + provenance.NewID()
	c := &conn{caller: caller, sessions: map[string]bool{}}
	s.conns[ss] = c
	go func() {
		ss.Wait()
		s.mu.Lock()
		delete(s.conns, ss)
		s.mu.Unlock()
		s.drop(c)
	}()
	return c, nil
}

// files returns the workspace of the MCP session a call came from.
func (s *Server) files(ss *mcp.ServerSession) (*files, error) {
	c, err := s.conn(ss)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.files == nil {
		if c.files, err = newFiles(s.tmp, s.cfg.Workspace); err != nil {
			return nil, err
		}
		c.files.budget, c.files.owner = &s.ws, c.caller.Owner
	}
	return c.files, nil
}

// drop closes what an MCP session left: its sandbox sessions and its
// workspace.
func (s *Server) drop(c *conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.sessions {
		s.cfg.Executor.CloseSession(context.Background(), id, c.caller)
	}
	c.sessions = nil
	if c.files != nil {
		c.files.close()
		c.files = nil
	}
}

// actor names the client for provenance: its name as it gave it.
func actor(ss *mcp.ServerSession) string {
	if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
		name := strings.Map(func(r rune) rune { // provenance takes printable text only
			if !unicode.IsGraphic(r) {
				return -1
			}
			return r
		}, p.ClientInfo.Name)
		if len(name) > runs.MaxActorID {
			name = name[:runs.MaxActorID]
		}
		return strings.ToValidUTF8(name, "")
	}
	return ""
}
