// Package service is the HTTP API over a skills Registry and Executor:
//
//	GET  /health                     liveness, counts, the interpreter
//	GET  /skills                     the loaded skills
//	GET  /skills/{name}              one skill
//	GET  /skills/{name}/schema       its input and output JSON Schemas
//	POST /skills/{name}/execute      {"args", "actor_id", "actor_type", "approved"} → {"result", "provenance"}
//	GET  /executions/{id}            a provenance record
//	POST /exec                       raw code, only with Config.EnableExec
//	GET  /metrics                    Prometheus text format
//
// Every error is JSON, {"error": {"code": ..., "message": ...}}, with a
// stable code and its status: bad_request 400, unauthorized 401,
// approval_required 403, not_found/unknown_skill/unknown_execution/
// exec_disabled 404, method_not_allowed 405, body_too_large 413,
// invalid_input 422 (with "pointer", the first failing JSON pointer, and
// "violations"), busy 429, internal 500 (never with a stack trace),
// invalid_output and run_failed 502, timeout 504.
package service

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/skills"
)

// The service's own error codes, beside skills' (invalid_input,
// approval_required, invalid_output, run_failed, timeout).
const (
	CodeBadRequest       = "bad_request"
	CodeUnauthorized     = "unauthorized"
	CodeNotFound         = "not_found"
	CodeUnknownSkill     = "unknown_skill"
	CodeUnknownExecution = "unknown_execution"
	CodeExecDisabled     = "exec_disabled"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeBodyTooLarge     = "body_too_large"
	CodeBusy             = "busy"
	CodeInternal         = "internal"
	CodeCanceled         = "canceled"
)

// statusOf maps every code to its HTTP status.
var statusOf = map[string]int{
	CodeBadRequest:              http.StatusBadRequest,
	CodeUnauthorized:            http.StatusUnauthorized,
	skills.CodeApprovalRequired: http.StatusForbidden,
	CodeNotFound:                http.StatusNotFound,
	CodeUnknownSkill:            http.StatusNotFound,
	CodeUnknownExecution:        http.StatusNotFound,
	CodeExecDisabled:            http.StatusNotFound,
	CodeMethodNotAllowed:        http.StatusMethodNotAllowed,
	CodeBodyTooLarge:            http.StatusRequestEntityTooLarge,
	skills.CodeInvalidInput:     http.StatusUnprocessableEntity,
	CodeBusy:                    http.StatusTooManyRequests,
	CodeInternal:                http.StatusInternalServerError,
	skills.CodeInvalidOutput:    http.StatusBadGateway,
	skills.CodeRunFailed:        http.StatusBadGateway,
	skills.CodeTimeout:          http.StatusGatewayTimeout,
	CodeCanceled:                http.StatusServiceUnavailable,
}

// Defaults for Config's zero values.
const (
	DefaultMaxBodyBytes   = 1 << 20
	DefaultRequestTimeout = time.Minute
)

// RequestTimeoutHeader lets a client shorten the request timeout for its
// own run request, in milliseconds: it cannot lengthen it.
const RequestTimeoutHeader = "X-Request-Timeout-Ms"

// Config configures a Service.
type Config struct {
	Registry *skills.Registry
	// Executor runs the skills, records their provenance, and looks it up
	// for GET /executions/{id}.
	Executor *skills.Executor
	// Tokens, when any, are the bearer tokens every endpoint but /health
	// requires (Authorization: Bearer TOKEN).
	Tokens []string
	// MaxBodyBytes caps request bodies; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxConcurrent bounds the runs in progress; 0 means GOMAXPROCS.
	MaxConcurrent int
	// MaxQueue bounds the requests waiting for a run slot, beyond which
	// they get 429; 0 means 4 × MaxConcurrent, negative means no queue.
	MaxQueue int
	// RequestTimeout bounds a run request, waiting included; 0 means
	// DefaultRequestTimeout. A skill's own timeout applies within it, and a
	// client can shorten it for its request (RequestTimeoutHeader).
	RequestTimeout time.Duration
	// EnableExec turns on POST /exec, which runs any code it is sent.
	EnableExec bool
	// ExecLimits bound POST /exec runs; a request may ask for less.
	ExecLimits wasmpy.Limits
	// Logger gets one line per request, with the execution id; nil logs nothing.
	Logger *slog.Logger
}

// Service serves the API; create it with New.
type Service struct {
	cfg     Config
	tokens  [][32]byte
	slots   chan struct{}
	queue   chan struct{}
	log     *slog.Logger
	handler http.Handler
	metrics *metrics
	started time.Time
}

// New checks cfg and builds the service.
func New(cfg Config) (*Service, error) {
	if cfg.Registry == nil || cfg.Executor == nil {
		return nil, errors.New("service: Config needs a Registry and an Executor")
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = runtime.GOMAXPROCS(0)
	}
	switch {
	case cfg.MaxQueue == 0:
		cfg.MaxQueue = 4 * cfg.MaxConcurrent
	case cfg.MaxQueue < 0:
		cfg.MaxQueue = 0
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	s := &Service{cfg: cfg, log: cfg.Logger, slots: make(chan struct{}, cfg.MaxConcurrent),
		queue: make(chan struct{}, cfg.MaxQueue), metrics: newMetrics(), started: time.Now()}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	for _, t := range cfg.Tokens {
		if t = strings.TrimSpace(t); t != "" {
			s.tokens = append(s.tokens, sha256.Sum256([]byte(t)))
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("GET /skills", s.listSkills)
	mux.HandleFunc("GET /skills/{name}", s.getSkill)
	mux.HandleFunc("GET /skills/{name}/schema", s.getSchema)
	mux.HandleFunc("POST /skills/{name}/execute", s.execute)
	mux.HandleFunc("GET /executions/{id}", s.getExecution)
	mux.HandleFunc("POST /exec", s.exec)
	mux.HandleFunc("GET /metrics", s.serveMetrics)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { s.fallback(mux, w, r) })
	s.handler = s.recoverer(s.logged(s.authorized(mux)))
	return s, nil
}

// Handler is the API as an http.Handler.
func (s *Service) Handler() http.Handler { return s.handler }

// Serve answers on ln until ctx is done, then shuts down gracefully: it
// stops accepting, lets the runs in progress finish (for at most grace; 0
// means a minute), and returns.
func (s *Service) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	if grace <= 0 {
		grace = time.Minute
	}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       s.cfg.RequestTimeout,
		WriteTimeout:      s.cfg.RequestTimeout + 10*time.Second,
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
	s.log.Info("shutting down: finishing runs in progress", "in_flight", len(s.slots), "queued", len(s.queue), "grace", grace.String())
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

// reqInfo collects what the request log line says beyond method and path.
type reqInfo struct {
	status      int
	code        string
	executionID string
	skill       string
	outcome     string
}

type infoKey struct{}

func info(r *http.Request) *reqInfo {
	if ri, ok := r.Context().Value(infoKey{}).(*reqInfo); ok {
		return ri
	}
	return &reqInfo{}
}

type statusWriter struct {
	http.ResponseWriter
	ri *reqInfo
}

func (w *statusWriter) WriteHeader(code int) {
	if w.ri.status == 0 {
		w.ri.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.ri.status == 0 {
		w.ri.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (s *Service) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ri := &reqInfo{}
		r = r.WithContext(context.WithValue(r.Context(), infoKey{}, ri))
		next.ServeHTTP(&statusWriter{ResponseWriter: w, ri: ri}, r)
		attrs := []any{"method", r.Method, "path", r.URL.Path, "status", ri.status,
			"duration_ms", float64(time.Since(start).Microseconds()) / 1000, "remote", r.RemoteAddr}
		for _, kv := range [][2]string{{"execution_id", ri.executionID}, {"skill", ri.skill}, {"outcome", ri.outcome}, {"code", ri.code}} {
			if kv[1] != "" {
				attrs = append(attrs, kv[0], kv[1])
			}
		}
		level := slog.LevelInfo
		if ri.status >= 500 {
			level = slog.LevelWarn
		}
		s.log.Log(r.Context(), level, "request", attrs...)
		s.metrics.request(ri.status)
	})
}

// recoverer turns a panic into a plain 500: the stack goes to the log,
// never to the client.
func (s *Service) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic serving request", "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				s.fail(w, r, CodeInternal, "internal error")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

func (s *Service) authorized(next http.Handler) http.Handler {
	if len(s.tokens) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			next.ServeHTTP(w, r)
			return
		}
		auth := r.Header.Get("Authorization")
		tok, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok {
			tok, ok = strings.CutPrefix(auth, "bearer ")
		}
		sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
		match := 0
		for _, t := range s.tokens { // compare with every token, in constant time
			match |= subtle.ConstantTimeCompare(sum[:], t[:])
		}
		if !ok || match == 0 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="wasmpy"`)
			s.fail(w, r, CodeUnauthorized, "a valid bearer token is required (Authorization: Bearer TOKEN)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// fallback answers what no route matched: 405 if the path exists for
// another method, else 404.
func (s *Service) fallback(mux *http.ServeMux, w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		s.fail(w, r, CodeMethodNotAllowed, fmt.Sprintf("%s %s: use %s", r.Method, r.URL.Path, strings.Join(allow, " or ")))
		return
	}
	s.fail(w, r, CodeNotFound, fmt.Sprintf("no such endpoint: %s %s", r.Method, r.URL.Path))
}

// errorBody is every error response: {"error": {...}}, maybe with the run.
type errorBody struct {
	Error      *skills.Error  `json:"error"`
	Result     *wasmpy.Result `json:"result,omitempty"`
	Provenance *skills.Record `json:"provenance,omitempty"`
}

func (s *Service) writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"internal error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func (s *Service) failWith(w http.ResponseWriter, r *http.Request, body errorBody) {
	info(r).code = body.Error.Code
	status, ok := statusOf[body.Error.Code]
	if !ok {
		status = http.StatusInternalServerError
	}
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	s.writeJSON(w, status, body)
}

func (s *Service) fail(w http.ResponseWriter, r *http.Request, code, msg string) {
	s.failWith(w, r, errorBody{Error: &skills.Error{Code: code, Message: msg}})
}

// internal answers 500 for the host's own failure, logging the cause.
func (s *Service) internal(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Error("internal error", "path", r.URL.Path, "err", err.Error())
	s.fail(w, r, CodeInternal, "internal error")
}

func (s *Service) health(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, http.StatusOK, map[string]any{
		"status":         "ok",
		"skills":         len(s.cfg.Registry.Skills()),
		"broken_skills":  len(s.cfg.Registry.Problems()),
		"interpreter":    s.cfg.Executor.Interpreter(),
		"in_flight":      len(s.slots),
		"queued":         len(s.queue),
		"uptime_seconds": int(time.Since(s.started).Seconds()),
	})
}

func (s *Service) listSkills(w http.ResponseWriter, r *http.Request) {
	list := []skills.Info{}
	for _, sk := range s.cfg.Registry.Skills() {
		list = append(list, sk.Info())
	}
	s.writeJSON(w, http.StatusOK, map[string]any{"skills": list})
}

func (s *Service) skill(w http.ResponseWriter, r *http.Request) (*skills.Skill, bool) {
	name := r.PathValue("name")
	info(r).skill = name
	sk, ok := s.cfg.Registry.Get(name)
	if !ok {
		s.fail(w, r, CodeUnknownSkill, fmt.Sprintf("no skill %q (GET /skills lists them)", name))
	}
	return sk, ok
}

func (s *Service) getSkill(w http.ResponseWriter, r *http.Request) {
	if sk, ok := s.skill(w, r); ok {
		s.writeJSON(w, http.StatusOK, sk.Info())
	}
}

func (s *Service) getSchema(w http.ResponseWriter, r *http.Request) {
	if sk, ok := s.skill(w, r); ok {
		s.writeJSON(w, http.StatusOK, map[string]json.RawMessage{"input": sk.InputSchema, "output": sk.OutputSchema})
	}
}

func (s *Service) getExecution(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	rec, err := s.cfg.Executor.Lookup(r.Context(), id)
	switch {
	case errors.Is(err, skills.ErrNoRecord):
		s.fail(w, r, CodeUnknownExecution, fmt.Sprintf("no execution %q", id))
	case err != nil:
		s.internal(w, r, err)
	default:
		info(r).executionID = id
		s.writeJSON(w, http.StatusOK, rec)
	}
}

// decodeBody reads a JSON object into v, strictly, answering 413 or 400.
func (s *Service) decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		s.fail(w, r, CodeBodyTooLarge, fmt.Sprintf("the request body is larger than %d bytes", tooBig.Limit))
		return false
	case err != nil:
		s.fail(w, r, CodeBadRequest, "reading the request body: "+err.Error())
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		s.fail(w, r, CodeBadRequest, "the request body is not the JSON object expected: "+err.Error())
		return false
	}
	if dec.More() {
		s.fail(w, r, CodeBadRequest, "the request body has data after its JSON object")
		return false
	}
	return true
}

// acquire takes a run slot, waiting in the bounded queue if need be.
func (s *Service) acquire(ctx context.Context) (release func(), code string) {
	select {
	case s.slots <- struct{}{}:
		return func() { <-s.slots }, ""
	default:
	}
	select {
	case s.queue <- struct{}{}:
	default:
		s.metrics.rejected.Add(1)
		return nil, CodeBusy
	}
	defer func() { <-s.queue }()
	select {
	case s.slots <- struct{}{}:
		return func() { <-s.slots }, ""
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, skills.CodeTimeout
		}
		return nil, CodeCanceled
	}
}

// executeBody is POST /skills/{name}/execute's body.
type executeBody struct {
	Args      json.RawMessage `json:"args"`
	ActorID   string          `json:"actor_id"`
	ActorType string          `json:"actor_type"`
	Approved  bool            `json:"approved"`
}

// runResponse is a run's answer: {"result", "provenance"}, and "error" when
// it failed.
type runResponse struct {
	Error      *skills.Error  `json:"error,omitempty"`
	Result     *wasmpy.Result `json:"result"`
	Provenance *skills.Record `json:"provenance"`
}

func (s *Service) execute(w http.ResponseWriter, r *http.Request) {
	sk, ok := s.skill(w, r)
	if !ok {
		return
	}
	var body executeBody
	if !s.decodeBody(w, r, &body) {
		return
	}
	req := skills.Request{Args: body.Args, ActorID: body.ActorID, ActorType: body.ActorType, Approved: body.Approved}
	if _, err := sk.Check(req); err != nil {
		s.refused(w, r, err)
		return
	}
	s.run(w, r, func(ctx context.Context) (*skills.Execution, error) { return s.cfg.Executor.Execute(ctx, sk, req) })
}

// execBody is POST /exec's body.
type execBody struct {
	Code   string   `json:"code"`
	Args   []string `json:"args"`
	Stdin  string   `json:"stdin"`
	Limits struct {
		TimeoutMS   int64  `json:"timeout_ms"`
		MemoryBytes uint64 `json:"memory_bytes"`
		Fuel        uint64 `json:"fuel"`
	} `json:"limits"`
	ActorID   string `json:"actor_id"`
	ActorType string `json:"actor_type"`
}

func (s *Service) exec(w http.ResponseWriter, r *http.Request) {
	if !s.cfg.EnableExec {
		s.fail(w, r, CodeExecDisabled, "POST /exec is disabled on this service")
		return
	}
	var body execBody
	if !s.decodeBody(w, r, &body) {
		return
	}
	if body.Code == "" {
		s.fail(w, r, CodeBadRequest, `"code" is empty`)
		return
	}
	max := s.cfg.ExecLimits
	lim := max
	if t := time.Duration(body.Limits.TimeoutMS) * time.Millisecond; t != 0 {
		if t < 0 || max.Timeout != 0 && t > max.Timeout {
			s.fail(w, r, CodeBadRequest, fmt.Sprintf("limits.timeout_ms: want 1 to %d", max.Timeout.Milliseconds()))
			return
		}
		lim.Timeout = t
	}
	if m := body.Limits.MemoryBytes; m != 0 {
		if max.Memory != 0 && m > max.Memory {
			s.fail(w, r, CodeBadRequest, fmt.Sprintf("limits.memory_bytes: at most %d", max.Memory))
			return
		}
		lim.Memory = m
	}
	if f := body.Limits.Fuel; f != 0 {
		if max.Fuel != 0 && f > max.Fuel {
			s.fail(w, r, CodeBadRequest, fmt.Sprintf("limits.fuel: at most %d", max.Fuel))
			return
		}
		lim.Fuel = f
	}
	req := skills.ExecRequest{Code: body.Code, Args: body.Args, Stdin: body.Stdin, Limits: lim, ActorID: body.ActorID, ActorType: body.ActorType}
	s.run(w, r, func(ctx context.Context) (*skills.Execution, error) { return s.cfg.Executor.Exec(ctx, req) })
}

// refused answers a request the executor turned down before running.
func (s *Service) refused(w http.ResponseWriter, r *http.Request, err error) {
	var se *skills.Error
	if errors.As(err, &se) {
		if se.Code == skills.CodeApprovalRequired {
			hinted := *se
			hinted.Message += `: send "approved": true`
			se = &hinted
		}
		s.failWith(w, r, errorBody{Error: se})
		return
	}
	s.internal(w, r, err)
}

// run takes a slot, runs, and answers with the execution.
func (s *Service) run(w http.ResponseWriter, r *http.Request, do func(context.Context) (*skills.Execution, error)) {
	timeout := s.cfg.RequestTimeout
	if h := r.Header.Get(RequestTimeoutHeader); h != "" {
		ms, err := strconv.ParseInt(h, 10, 64)
		if err != nil || ms < 1 {
			s.fail(w, r, CodeBadRequest, fmt.Sprintf("%s: want a positive number of milliseconds, got %q", RequestTimeoutHeader, h))
			return
		}
		timeout = min(timeout, time.Duration(min(ms, math.MaxInt64/int64(time.Millisecond)))*time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	release, code := s.acquire(ctx)
	if code != "" {
		msg := map[string]string{
			CodeBusy:           fmt.Sprintf("busy: %d runs in progress and %d waiting; retry later", cap(s.slots), cap(s.queue)),
			skills.CodeTimeout: "timed out waiting for a free run slot",
			CodeCanceled:       "canceled",
		}[code]
		s.fail(w, r, code, msg)
		return
	}
	s.metrics.inFlight.Add(1)
	x, err := do(ctx)
	s.metrics.inFlight.Add(-1)
	release()
	if err != nil {
		switch {
		case r.Context().Err() != nil:
			info(r).outcome = skills.OutcomeCanceled
			s.fail(w, r, CodeCanceled, "the client went away")
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			info(r).outcome = skills.CodeTimeout
			s.fail(w, r, skills.CodeTimeout, "the request timed out before the run could start")
		default:
			s.refused(w, r, err)
		}
		return
	}
	ri := info(r)
	ri.executionID, ri.outcome = x.Record.ExecutionID, x.Record.Outcome
	s.metrics.execution(x.Record.Skill, x.Record.Outcome, x.Record.DurationMS)
	w.Header().Set("X-Execution-Id", x.Record.ExecutionID)
	if x.Error != nil {
		s.failWith(w, r, errorBody{Error: x.Error, Result: x.Result, Provenance: x.Record})
		return
	}
	s.writeJSON(w, http.StatusOK, runResponse{Result: x.Result, Provenance: x.Record})
}

// metrics are a handful of counters in the Prometheus text format, written
// by hand: not worth a dependency.
type metrics struct {
	inFlight atomic.Int64
	rejected atomic.Int64
	mu       sync.Mutex
	requests map[int]int64
	runs     map[[2]string]int64
	runMS    map[string]float64
}

func newMetrics() *metrics {
	return &metrics{requests: map[int]int64{}, runs: map[[2]string]int64{}, runMS: map[string]float64{}}
}

func (m *metrics) lock()   { m.mu.Lock() }
func (m *metrics) unlock() { m.mu.Unlock() }

func sortedKeys[K comparable, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
	return keys
}

func (m *metrics) request(status int) {
	m.lock()
	m.requests[status]++
	m.unlock()
}

func (m *metrics) execution(skill, outcome string, ms float64) {
	m.lock()
	m.runs[[2]string{skill, outcome}]++
	m.runMS[skill] += ms
	m.unlock()
}

func (s *Service) serveMetrics(w http.ResponseWriter, r *http.Request) {
	m := s.metrics
	var b strings.Builder
	m.lock()
	b.WriteString("# HELP wasmpy_http_requests_total HTTP requests answered, by status.\n# TYPE wasmpy_http_requests_total counter\n")
	for _, st := range sortedKeys(m.requests) {
		fmt.Fprintf(&b, "wasmpy_http_requests_total{status=\"%d\"} %d\n", st, m.requests[st])
	}
	b.WriteString("# HELP wasmpy_executions_total Skill executions, by skill and outcome (skill \"\" is POST /exec).\n# TYPE wasmpy_executions_total counter\n")
	for _, k := range sortedKeys(m.runs) {
		fmt.Fprintf(&b, "wasmpy_executions_total{skill=%q,outcome=%q} %d\n", k[0], k[1], m.runs[k])
	}
	b.WriteString("# HELP wasmpy_execution_duration_ms_total Time spent running, by skill.\n# TYPE wasmpy_execution_duration_ms_total counter\n")
	for _, k := range sortedKeys(m.runMS) {
		fmt.Fprintf(&b, "wasmpy_execution_duration_ms_total{skill=%q} %g\n", k, m.runMS[k])
	}
	m.unlock()
	fmt.Fprintf(&b, "# HELP wasmpy_executions_in_flight Runs in progress.\n# TYPE wasmpy_executions_in_flight gauge\nwasmpy_executions_in_flight %d\n", m.inFlight.Load())
	fmt.Fprintf(&b, "# HELP wasmpy_executions_queued Requests waiting for a run slot.\n# TYPE wasmpy_executions_queued gauge\nwasmpy_executions_queued %d\n", len(s.queue))
	fmt.Fprintf(&b, "# HELP wasmpy_executions_rejected_total Requests refused with 429.\n# TYPE wasmpy_executions_rejected_total counter\nwasmpy_executions_rejected_total %d\n", m.rejected.Load())
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	io.WriteString(w, b.String())
}
