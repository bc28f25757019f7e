// Package service is the HTTP API over a skills Registry and a runs Executor
// (the run service MCP and the CLI share too):
//
//	GET  /health                     counts, the interpreter; 503 {"status": "loading"} until the skills have loaded
//	GET  /health/live                liveness: 200 while the process serves
//	GET  /health/ready               readiness: 200, or 503 not_ready while draining, loading skills, or the store is unreachable
//	GET  /skills                     the loaded skills
//	GET  /skills/{name}              one skill
//	GET  /skills/{name}/schema       its input and output JSON Schemas
//	POST /skills/{name}/execute      {"args", "actor_id", "actor_type", "approved", "version"} → {"output", "run", "provenance"}
//	POST /skills/register            an admin's: a skill version from its files (see register.go)
//	/skills/{name}/versions/{v}...   one version: GET; an admin's POST .../disable, .../enable, DELETE
//	GET  /audit                      an admin's: the registered skills' audit trail
//	GET  /executions/{id}            a provenance record
//	POST /exec                       raw code, only with Config.EnableExec
//	POST /def                        a function the LLM writes from its signature (wasmpy def), only with Config.EnableExec
//	/sessions...                     Python state across turns, with POST /exec (see sessions.go)
//	GET  /metrics                    Prometheus text format
//	GET  /openapi.json               the OpenAPI 3.1 document of every route
//	GET  /                           the classic routes: name, version, links
//	GET  /skills/list                the skills, as GET /skills
//	POST /skills/execute             {"skill", "args", "actor_id", "actor_type"} → {"result": the output, "provenance"}
//	     /mcp                        the MCP server, with Config.MCP (streamable HTTP)
//
// Every error is JSON, {"error": {"code": ..., "message": ...}}, with a
// stable code and its status: bad_request 400, unauthorized 401,
// approval_required/cross_origin/forbidden/tier_forbidden 403, not_found/unknown_skill/
// unknown_execution/unknown_session/exec_disabled 404, method_not_allowed 405,
// session_conflict/skill_exists/skill_disabled/not_registered 409,
// body_too_large 413, unsupported_media_type 415, invalid_input 422 (with
// "pointer", the first failing JSON pointer, and "violations"),
// invalid_skill 422 (with "problems"), busy, too_many_sessions and
// budget_exceeded 429,
// internal 500 (never with a stack trace), no_registration 501,
// invalid_output and run_failed 502, loading 503 (a skill still being checked: the service answers while
// its Registry loads), not_ready 503, timeout 504.
//
// A POST body must be application/json (POST /skills/register also takes
// multipart/form-data), and a browser's cross-origin POST
// is refused (Sec-Fetch-Site, Origin), so a web page cannot drive a service
// that has no tokens.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/skills"
)

// DefaultMaxBodyBytes is Config.MaxBodyBytes's default.
const DefaultMaxBodyBytes = 1 << 20

// RequestTimeoutHeader lets a client shorten the request timeout for its
// own run request, in milliseconds: it cannot lengthen it.
const RequestTimeoutHeader = "X-Request-Timeout-Ms"

// Config configures a Service.
type Config struct {
	// Registry is the skills served; it may still be loading (skills.Start),
	// and the service answers meanwhile.
	Registry *skills.Registry
	// Executor runs the skills, records their provenance, and looks it up
	// for GET /executions/{id}.
	Executor *runs.Executor
	// Store, when set, is the provenance store; GET /health/ready pings it.
	Store interface {
		Ping(ctx context.Context) error
	}
	// DrainDelay is how long Serve keeps answering once told to stop, with
	// /health/ready failing, before it closes its listener: time for a load
	// balancer's health checks to take the replica out of rotation. 0 means
	// none.
	DrainDelay time.Duration
	// Tokens are static bearer tokens, each with provenance.RoleRunner and
	// no maximum tier.
	Tokens []string
	// TokenStore, when set, holds tokens made with provenance.NewToken, with
	// their roles: looked up on each request, so one created while the
	// service runs works at once and one deleted stops at once.
	//
	// When there are static tokens, or the store holds any when New is
	// called, every endpoint but /health and /health/ready requires one
	// (Authorization: Bearer TOKEN); otherwise none does, and nothing that
	// needs an admin (registering skills) can be done.
	TokenStore provenance.Tokens
	// MaxBodyBytes caps request bodies; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Admission bounds the runs (slots, queue, request timeout) and counts
	// them; share one with the other front ends (MCP) so they share its
	// limits. A client can shorten the timeout (RequestTimeoutHeader). nil
	// means one with the defaults.
	Admission *runs.Admission
	// MCP, when set, is served at /mcp (the MCP streamable HTTP transport),
	// behind the same tokens.
	MCP http.Handler
	// EnableExec turns on POST /exec, which runs any code it is sent.
	EnableExec bool
	// ExecLimits bound POST /exec runs; a request may ask for less.
	ExecLimits wasmpy.Limits
	// Version is wasmpy's version, for GET / and the OpenAPI document.
	Version string
	// Logger gets one line per request, with the execution id; nil logs nothing.
	Logger *slog.Logger
}

// Service serves the API; create it with New.
type Service struct {
	cfg      Config
	static   []staticToken
	auth     bool // tokens are required
	adm      *runs.Admission
	log      *slog.Logger
	handler  http.Handler
	metrics  *metrics
	started  time.Time
	draining atomic.Bool
	// patterns are the routes registered, each documented in apiRoutes.
	patterns []string
	openapi  map[string]any
}

// New checks cfg and builds the service.
func New(cfg Config) (*Service, error) {
	if cfg.Registry == nil || cfg.Executor == nil {
		return nil, errors.New("service: Config needs a Registry and an Executor")
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if err := cfg.ExecLimits.Validate(); err != nil {
		return nil, fmt.Errorf("service: ExecLimits: %w", err)
	}
	adm := cfg.Admission
	if adm == nil {
		var err error
		if adm, err = runs.NewAdmission(runs.AdmissionConfig{}); err != nil {
			return nil, err
		}
	}
	s := &Service{cfg: cfg, log: cfg.Logger, adm: adm, metrics: newMetrics(), started: time.Now()}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if err := s.setupAuth(cfg); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	route := func(pattern string, h func(http.ResponseWriter, *http.Request) error) {
		mux.HandleFunc(pattern, s.handle(h))
		s.patterns = append(s.patterns, pattern)
	}
	route("GET /health", s.health)
	route("GET /health/live", s.live)
	route("GET /health/ready", s.ready)
	route("GET /skills", s.listSkills)
	route("GET /skills/{name}", s.getSkill)
	route("GET /skills/{name}/schema", s.getSchema)
	route("POST /skills/{name}/execute", s.execute)
	route("GET /executions/{id}", s.getExecution)
	route("POST /exec", s.exec)
	route("POST /def", s.def)
	route("POST /sessions", s.newSession)
	route("GET /sessions/{id}", s.getSession)
	route("POST /sessions/{id}/exec", s.sessionExec)
	route("POST /sessions/{id}/fork", s.forkSession)
	route("DELETE /sessions/{id}", s.deleteSession)
	route("GET /metrics", s.serveMetrics)
	route("GET /openapi.json", s.serveOpenAPI)
	s.classicRoutes(route)
	s.registryRoutes(route)
	s.openapi = openAPI(cfg.Version, apiRoutes)
	if cfg.MCP != nil {
		mux.Handle("/mcp", cfg.MCP)
	}
	mux.HandleFunc("/", s.handle(func(w http.ResponseWriter, r *http.Request) error { return s.fallback(mux, w, r) }))
	s.handler = s.recoverer(s.logged(s.sameOrigin(s.authorized(mux))))
	return s, nil
}

// Handler is the API as an http.Handler.
func (s *Service) Handler() http.Handler { return s.handler }

// Serve answers on ln until ctx is done, then shuts down gracefully: it
// fails /health/ready for Config.DrainDelay while still answering, then
// stops accepting, lets the runs in progress finish (for at most grace; 0
// means a minute), and returns.
func (s *Service) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	if grace <= 0 {
		grace = time.Minute
	}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       s.adm.Config().RequestTimeout,
		WriteTimeout:      s.adm.Config().RequestTimeout + 10*time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	s.draining.Store(true)
	if d := s.cfg.DrainDelay; d > 0 {
		s.log.Info("draining: /health/ready fails while the balancer notices", "delay", d.String())
		select {
		case err := <-done:
			return err
		case <-time.After(d):
		}
	}
	s.log.Info("shutting down: finishing runs in progress", "in_flight", s.adm.Stats().InFlight, "queued", s.adm.Stats().Queued, "grace", grace.String())
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		srv.Close() // cancels what is left: their records say canceled
	}
	<-done
	s.log.Info("shut down")
	return err
}
