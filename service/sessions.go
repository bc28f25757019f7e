package service

import (
	"context"
	"errors"
	"net/http"

	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/tiers"
)

// Sessions: Python state that lasts across turns (see wasmpy.Session).
// They run any code they are sent, so they come with POST /exec
// (Config.EnableExec). A session belongs to the token that made it: any
// other token gets 404, as for a session that does not exist.
//
//	POST   /sessions                 → 201 {"session_id", "turns", "state_hash", ...}
//	POST   /sessions/{id}/exec       as POST /exec, one turn: {"output", "run", "provenance"}
//	GET    /sessions/{id}            → {"session_id", "turns", ...}
//	POST   /sessions/{id}/fork       → 201, a new session from this one's state
//	DELETE /sessions/{id}            → 204

// The codes of session errors.
const (
	CodeUnknownSession  = "unknown_session"        // 404
	CodeSessionConflict = "session_conflict"       // 409: another replica's turn came first; retry
	CodeTooManySessions = runs.CodeTooManySessions // 429
)

func (s *Service) sessionsEnabled() error {
	if !s.cfg.EnableExec {
		return fail(CodeExecDisabled, "sessions run any code they are sent: they are disabled with POST /exec on this service")
	}
	return nil
}

// sessionErr gives the executor's session errors their codes.
func sessionErr(r *http.Request, err error) error {
	switch {
	case errors.Is(err, runs.ErrNoSession):
		return fail(CodeUnknownSession, "no session %q", r.PathValue("id"))
	case errors.Is(err, runs.ErrSessionConflict):
		return fail(CodeSessionConflict, "%s", err.Error())
	}
	return err
}

func (s *Service) newSession(w http.ResponseWriter, r *http.Request) error {
	if err := s.sessionsEnabled(); err != nil {
		return err
	}
	var body sessionBody
	if r.ContentLength != 0 { // no body, or an object
		if err := s.decodeBody(w, r, &body); err != nil {
			return err
		}
	}
	in, err := s.cfg.Executor.NewSession(r.Context(), caller(r), body.Tier)
	if err != nil {
		return sessionErr(r, err)
	}
	s.writeJSON(w, http.StatusCreated, in)
	return nil
}

func (s *Service) getSession(w http.ResponseWriter, r *http.Request) error {
	if err := s.sessionsEnabled(); err != nil {
		return err
	}
	in, err := s.cfg.Executor.Session(r.Context(), r.PathValue("id"), caller(r))
	if err != nil {
		return sessionErr(r, err)
	}
	s.writeJSON(w, http.StatusOK, in)
	return nil
}

func (s *Service) forkSession(w http.ResponseWriter, r *http.Request) error {
	if err := s.sessionsEnabled(); err != nil {
		return err
	}
	in, err := s.cfg.Executor.ForkSession(r.Context(), r.PathValue("id"), caller(r))
	if err != nil {
		return sessionErr(r, err)
	}
	s.writeJSON(w, http.StatusCreated, in)
	return nil
}

func (s *Service) deleteSession(w http.ResponseWriter, r *http.Request) error {
	if err := s.sessionsEnabled(); err != nil {
		return err
	}
	if err := s.cfg.Executor.CloseSession(r.Context(), r.PathValue("id"), caller(r)); err != nil {
		return sessionErr(r, err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Service) sessionExec(w http.ResponseWriter, r *http.Request) error {
	if err := s.sessionsEnabled(); err != nil {
		return err
	}
	id, c := r.PathValue("id"), caller(r)
	req, w, err := s.execRequest(w, r, func(asked string) (*tiers.Tier, error) {
		if asked != "" {
			return nil, fail(CodeBadRequest, `"tier": a session's turns run in the tier it was made with (POST /sessions {"tier": ...})`)
		}
		in, err := s.cfg.Executor.Session(r.Context(), id, c)
		if err != nil {
			return nil, sessionErr(r, err)
		}
		return s.cfg.Executor.ExecTier(c, in.Tier)
	})
	if err != nil {
		return err
	}
	err = s.run(w, r, func(ctx context.Context) (*runs.Execution, error) {
		x, err := s.cfg.Executor.SessionExec(ctx, id, req)
		return x, sessionErr(r, err)
	}, nil)
	if err != nil {
		s.writeError(w, r, err) // the stream, once started, takes it as its last event
	}
	return nil
}
