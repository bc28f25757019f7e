package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/skills"
)

func (s *Service) health(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, http.StatusOK, map[string]any{
		"status":         "ok",
		"skills":         len(s.cfg.Registry.Skills()),
		"broken_skills":  len(s.cfg.Registry.Problems()),
		"loading_skills": len(s.cfg.Registry.Pending()),
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
	switch {
	case ok:
	case s.cfg.Registry.Loading(name):
		s.fail(w, r, CodeLoading, fmt.Sprintf("skill %q is still being loaded; retry shortly", name))
	default:
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
	lim, err := s.limits(body.Limits)
	if err != nil {
		s.fail(w, r, CodeBadRequest, err.Error())
		return
	}
	req := skills.ExecRequest{Code: body.Code, Args: body.Args, Stdin: body.Stdin, Limits: lim, ActorID: body.ActorID, ActorType: body.ActorType}
	if wantsStream(r) {
		events := newEventStream(w)
		req.Stdout, req.Stderr, w = events.stream("stdout"), events.stream("stderr"), events
	}
	s.run(w, r, func(ctx context.Context) (*skills.Execution, error) { return s.cfg.Executor.Exec(ctx, req) })
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
