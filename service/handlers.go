package service

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/skills"
	"github.com/wasmpy/wasmpy/tiers"
)

// healthInfo is GET /health's answer (and /health/live's).
type healthInfo struct {
	// Status is ok; degraded: no skill loaded and none loading; loading
	// (/health only, with 503): the skills are still being checked.
	Status        string                 `json:"status"`
	Skills        int                    `json:"skills"`
	BrokenSkills  int                    `json:"broken_skills"`
	LoadingSkills int                    `json:"loading_skills"`
	Interpreter   wasmpy.InterpreterInfo `json:"interpreter"`
	InFlight      int                    `json:"in_flight"`
	Queued        int                    `json:"queued"`
	UptimeSeconds int                    `json:"uptime_seconds"`
}

// health is the classic GET /health: 503 {"status": "loading"} until the
// initial skill load has finished, so that a client that waits for it
// finds every skill loaded; then 200, as liveAnswer.
func (s *Service) health(w http.ResponseWriter, r *http.Request) error {
	info := s.healthInfo()
	if !s.cfg.Registry.Loaded() {
		info.Status = "loading"
		w.Header().Set("Retry-After", "1")
		s.writeJSON(w, http.StatusServiceUnavailable, info)
		return nil
	}
	s.writeJSON(w, http.StatusOK, info)
	return nil
}

// live is GET /health/live: 200 while the process serves, loading or not,
// for an orchestrator's liveness probe.
func (s *Service) live(w http.ResponseWriter, r *http.Request) error {
	s.writeJSON(w, http.StatusOK, s.healthInfo())
	return nil
}

// healthInfo is the process's state; status is "degraded" when no skill is
// loaded and none is still loading: nothing can be executed.
func (s *Service) healthInfo() healthInfo {
	st := s.adm.Stats()
	n, pending := len(s.cfg.Registry.Skills()), len(s.cfg.Registry.Pending())
	status := "ok"
	if n == 0 && pending == 0 {
		status = "degraded"
	}
	return healthInfo{Status: status, Skills: n, BrokenSkills: len(s.cfg.Registry.Problems()),
		LoadingSkills: pending, Interpreter: s.cfg.Executor.Interpreter(), InFlight: st.InFlight, Queued: st.Queued,
		UptimeSeconds: int(time.Since(s.started).Seconds())}
}

// readyTimeout bounds the store's ping in /health/ready.
const readyTimeout = 2 * time.Second

// ready answers whether a balancer should send this replica traffic.
// readyInfo is GET /health/ready's answer when this replica takes traffic.
type readyInfo struct {
	Status string `json:"status"` // ready
}

func (s *Service) ready(w http.ResponseWriter, r *http.Request) error {
	switch {
	case s.draining.Load():
		return fail(CodeNotReady, "draining: this replica is shutting down")
	case !s.cfg.Registry.Loaded():
		return fail(CodeNotReady, "loading skills")
	}
	if s.cfg.Store != nil {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if err := s.cfg.Store.Ping(ctx); err != nil {
			s.log.Warn("the store does not answer", "err", err.Error())
			return fail(CodeNotReady, "the store does not answer")
		}
	}
	s.writeJSON(w, http.StatusOK, readyInfo{Status: "ready"})
	return nil
}

func (s *Service) listSkills(w http.ResponseWriter, r *http.Request) error {
	s.writeJSON(w, http.StatusOK, s.skillList())
	return nil
}

// skill finds the skill the path names, at its version if the path has
// one; a disabled version is found (to describe it), not refused.
func (s *Service) skill(r *http.Request) (skills.Version, error) {
	return s.skillNamed(r, r.PathValue("name"), r.PathValue("version"))
}

// skillNamed finds the skill called name at version ("" for the one that
// runs by default).
func (s *Service) skillNamed(r *http.Request, name, version string) (skills.Version, error) {
	info(r).skill = name
	v, ok := s.cfg.Registry.Find(name, version)
	switch {
	case ok:
		return v, nil
	case s.cfg.Registry.Loading(name):
		return v, fail(CodeLoading, "skill %q is still being loaded; retry shortly", name)
	case version != "" && len(s.cfg.Registry.Versions(name)) > 0:
		return v, s.cfg.Registry.Unknown(name, version)
	}
	return v, fail(CodeUnknownSkill, "no skill %q (GET /skills lists them)", name)
}

// runnable finds the skill a run asks for and checks it may run: not
// disabled, here or on another replica.
func (s *Service) runnable(r *http.Request, name, version string) (*skills.Skill, error) {
	v, err := s.skillNamed(r, name, version)
	if err != nil {
		return nil, err
	}
	return s.cfg.Registry.Runnable(r.Context(), v.Skill)
}

func (s *Service) getSkill(w http.ResponseWriter, r *http.Request) error {
	v, err := s.skill(r)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, s.describe(v))
	return nil
}

// schemaPair is GET /skills/{name}/schema's answer: the skill's JSON Schemas.
type schemaPair struct {
	Input  json.RawMessage `json:"input"`
	Output json.RawMessage `json:"output"`
}

func (s *Service) getSchema(w http.ResponseWriter, r *http.Request) error {
	v, err := s.skill(r)
	if err != nil {
		return err
	}
	s.writeJSON(w, http.StatusOK, schemaPair{Input: v.InputSchema, Output: v.OutputSchema})
	return nil
}

func (s *Service) getExecution(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	rec, err := s.cfg.Executor.Lookup(r.Context(), caller(r), id)
	switch {
	case errors.Is(err, provenance.ErrNotFound):
		return fail(CodeUnknownExecution, "no execution %q", id)
	case err != nil:
		return err
	}
	info(r).executionID = id
	s.writeJSON(w, http.StatusOK, runs.ClassicRecord(rec))
	return nil
}

func (s *Service) execute(w http.ResponseWriter, r *http.Request) error {
	var body executeBody
	if err := s.decodeBody(w, r, &body); err != nil {
		return err
	}
	sk, err := s.runnable(r, r.PathValue("name"), body.Version)
	if err != nil {
		return err
	}
	return s.executeSkill(w, r, sk, runs.Request{Args: body.Args, ActorID: body.ActorID, ActorType: body.ActorType, Approved: body.Approved,
		Tier: body.Tier}, nil)
}

// executeSkill checks req before taking a run slot, then runs it; answer,
// when set, shapes the answer from the execution (else the execution itself).
func (s *Service) executeSkill(w http.ResponseWriter, r *http.Request, sk *skills.Skill, req runs.Request, answer func(*runs.Execution) any) error {
	req.Caller = caller(r)
	tier, err := s.cfg.Executor.SkillTier(req.Caller, sk, req.Tier)
	if err != nil {
		return err
	}
	req.Tier = tier.Name
	if _, err := runs.Check(sk, req); err != nil {
		return err
	}
	return s.run(w, r, func(ctx context.Context) (*runs.Execution, error) { return s.cfg.Executor.Execute(ctx, sk, req) }, answer)
}

func (s *Service) exec(w http.ResponseWriter, r *http.Request) error {
	if !s.cfg.EnableExec {
		return fail(CodeExecDisabled, "POST /exec is disabled on this service")
	}
	req, w, err := s.execRequest(w, r, func(asked string) (*tiers.Tier, error) { return s.cfg.Executor.ExecTier(caller(r), asked) })
	if err != nil {
		return err
	}
	// The stream, once started, takes the error as its last event.
	if err := s.run(w, r, func(ctx context.Context) (*runs.Execution, error) { return s.cfg.Executor.Exec(ctx, req) }, nil); err != nil {
		s.writeError(w, r, err)
	}
	return nil
}

// run runs do through admission control and answers with the execution,
// or with what answer makes of it.
func (s *Service) run(w http.ResponseWriter, r *http.Request, do func(context.Context) (*runs.Execution, error), answer func(*runs.Execution) any) error {
	var timeout time.Duration
	if h := r.Header.Get(RequestTimeoutHeader); h != "" {
		ms, err := strconv.ParseInt(h, 10, 64)
		if err != nil || ms < 1 {
			return fail(CodeBadRequest, "%s: want a positive number of milliseconds, got %q", RequestTimeoutHeader, h)
		}
		timeout = time.Duration(min(ms, math.MaxInt64/int64(time.Millisecond))) * time.Millisecond
	}
	x, err := s.adm.Run(r.Context(), timeout, do)
	if err != nil {
		var se *skills.Error
		if errors.As(err, &se) && (se.Code == CodeCanceled || se.Code == runs.CodeTimeout) {
			info(r).outcome = se.Code
		}
		return err
	}
	ri := info(r)
	ri.executionID, ri.outcome = x.Record.ExecutionID, x.Record.Outcome
	w.Header().Set("X-Execution-Id", x.Record.ExecutionID)
	var body any = x
	if answer != nil {
		body = answer(x)
	}
	if x.Error != nil {
		return &failedRun{x: x, answer: body}
	}
	s.writeJSON(w, http.StatusOK, body)
	return nil
}

// execRequest reads the body of POST /exec and of a session turn into a
// request of the caller's in the tier tierOf gives for the body's, within
// the tier's limits and the service's ceilings (runs.Executor.ExecLimits);
// when the client asks for a stream, the run's output goes to it and w
// becomes the stream.
func (s *Service) execRequest(w http.ResponseWriter, r *http.Request, tierOf func(asked string) (*tiers.Tier, error)) (runs.ExecRequest, http.ResponseWriter, error) {
	var body execBody
	if err := s.decodeBody(w, r, &body); err != nil {
		return runs.ExecRequest{}, w, err
	}
	if body.Code == "" {
		return runs.ExecRequest{}, w, fail(CodeBadRequest, `"code" is empty`)
	}
	tier, err := tierOf(body.Tier)
	if err != nil {
		return runs.ExecRequest{}, w, err
	}
	lim, err := s.cfg.Executor.ExecLimits(tier, body.Limits, s.cfg.ExecLimits)
	if err != nil {
		return runs.ExecRequest{}, w, err
	}
	req := runs.ExecRequest{Code: body.Code, Args: body.Args, Stdin: body.Stdin, Limits: lim, ActorID: body.ActorID, ActorType: body.ActorType,
		Tier: tier.Name, Caller: caller(r)}
	if wantsStream(r) {
		events := newEventStream(w)
		req.Stdout, req.Stderr, w = events.stream("stdout"), events.stream("stderr"), events
	}
	return req, w, nil
}
