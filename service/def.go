package service

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/codegen"
	"github.com/wasmpy/wasmpy/runs"
)

// CodeNoLLM answers POST /def on a service with no LLM endpoint.
const CodeNoLLM = "no_llm"

// defBody is POST /def's body: what `wasmpy def` takes, as JSON.
type defBody struct {
	Signature  string               `json:"signature"`             // the def line and its docstring
	Args       []any                `json:"args"`                  // positional arguments
	Kwargs     map[string]any       `json:"kwargs"`                // keyword arguments
	Tests      bool                 `json:"tests,omitempty"`       // ask the model for unittest tests too
	MinQuality string               `json:"min_quality,omitempty"` // complexity=N,lines=N,tests=N,hints,docstring
	Style      string               `json:"style,omitempty"`       // typed (default) or simple
	Attempts   int                  `json:"attempts,omitempty"`    // LLM replies to try (default 3)
	Model      string               `json:"model,omitempty"`       // default: the service's --llm-model
	Limits     runs.RequestedLimits `json:"limits"`
	ActorID    string               `json:"actor_id"`
	ActorType  string               `json:"actor_type"`
	Tier       string               `json:"tier,omitempty"` // the generated code's tier; default: the strictest
}

// defAnswer is POST /def's answer: the fields `wasmpy def --json` prints
// (ok, the code, the value, the attempts, tests and grades; error {kind,
// message} when the generation failed), the last run as run (as every
// route's), and the provenance record of the generation.
type defAnswer struct {
	OK         bool                 `json:"ok"`
	Tier       string               `json:"tier"`
	Error      any                  `json:"error"`
	Function   string               `json:"function,omitempty"`
	Value      json.RawMessage      `json:"value,omitempty"`
	Code       string               `json:"code"`
	TestCode   string               `json:"test_code,omitempty"`
	Tests      []codegen.TestResult `json:"tests,omitempty"`
	Quality    *codegen.Quality     `json:"quality,omitempty"`
	Cached     bool                 `json:"cached"`
	Attempts   []codegen.Attempt    `json:"attempts"`
	Run        *wasmpy.Result       `json:"run"` // the last attempt's run; null when none ran
	Provenance *runs.RecordJSON     `json:"provenance"`
}

// def is POST /def: a function generated from its signature by the
// service's LLM, validated, tested and graded, then called with the
// arguments, as `wasmpy def` does; recorded (kind def) like any run. A
// generation that ran answers 200, ok or not (error.kind says how it
// failed); arguments that do not fit the signature are a 400. It runs code
// the LLM writes, so it is off unless --enable-exec, as POST /exec is.
func (s *Service) def(w http.ResponseWriter, r *http.Request) error {
	if !s.cfg.EnableExec {
		return fail(CodeExecDisabled, "POST /def is disabled on this service: it runs generated code, as POST /exec does (--enable-exec)")
	}
	var body defBody
	if err := s.decodeBody(w, r, &body); err != nil {
		return err
	}
	if strings.TrimSpace(body.Signature) == "" {
		return fail(CodeBadRequest, `"signature" is empty: give the def line and its docstring`)
	}
	bar, err := codegen.ParseQualityBar(body.MinQuality)
	if err != nil {
		return fail(CodeBadRequest, "min_quality: %s", strings.TrimPrefix(err.Error(), "codegen: "))
	}
	if body.Attempts < 0 {
		return fail(CodeBadRequest, "attempts: want a positive number, got %d", body.Attempts)
	}
	tier, err := s.cfg.Executor.DefTier(caller(r), body.Tier)
	if err != nil {
		return err
	}
	lim, err := s.cfg.Executor.ExecLimits(tier, body.Limits, s.cfg.ExecLimits)
	if err != nil {
		return err
	}
	req := runs.DefRequest{Signature: body.Signature, Args: body.Args, Kwargs: body.Kwargs, Tests: body.Tests, MinQuality: bar,
		Style: body.Style, Attempts: body.Attempts, Model: body.Model, Limits: lim, ActorID: body.ActorID, ActorType: body.ActorType,
		Tier: tier.Name, Caller: caller(r)}
	var d *runs.DefExecution
	x, err := s.adm.Run(r.Context(), 0, func(ctx context.Context) (*runs.Execution, error) {
		var err error
		if d, err = s.cfg.Executor.Def(ctx, req); err != nil {
			return nil, err
		}
		x := &runs.Execution{Record: d.Record}
		if d.Report != nil {
			x.Result = d.Report.Result
		}
		return x, nil
	})
	if errors.Is(err, runs.ErrNoLLM) {
		return fail(CodeNoLLM, "POST /def needs an LLM endpoint: start the service with --llm-base-url (and --llm-model)")
	}
	if err != nil {
		return err
	}
	ri := info(r)
	ri.executionID, ri.outcome = x.Record.ExecutionID, x.Record.Outcome
	w.Header().Set("X-Execution-Id", x.Record.ExecutionID)
	ans := defAnswer{OK: d.Err == nil, Tier: tier.Name, Attempts: []codegen.Attempt{}, Provenance: runs.ClassicRecord(d.Record)}
	if fr := d.Report; fr != nil {
		ans.Run, ans.Code, ans.Cached, ans.Attempts = fr.Result, fr.Code, fr.Cached, fr.Attempts
		ans.Function, ans.TestCode, ans.Tests, ans.Quality = fr.Name, fr.TestCode, fr.Tests, fr.Quality
		if fr.Result != nil {
			ans.Value = fr.Value
		}
	}
	switch {
	case d.Err != nil:
		var rep *codegen.Report
		if d.Report != nil {
			rep = &d.Report.Report
		}
		ans.Error = map[string]string{"kind": runs.CodegenFailure(d.Err, rep),
			"message": strings.Join(strings.Fields(strings.TrimPrefix(d.Err.Error(), "codegen: ")), " ")}
	case ans.Run != nil:
		ans.Error = ans.Run.Error
	}
	s.writeJSON(w, http.StatusOK, ans)
	return nil
}
