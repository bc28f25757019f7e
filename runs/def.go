package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/codegen"
	"github.com/wasmpy/wasmpy/llm"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/skills"
	"github.com/wasmpy/wasmpy/tiers"
)

// DefRequest asks for a function the LLM writes from its signature, as
// `wasmpy def` does (POST /def): generated, validated, tested, graded,
// then called with Args and Kwargs in the sandbox.
type DefRequest struct {
	Signature string         // the def line, with its docstring
	Args      []any          // positional arguments, JSON values
	Kwargs    map[string]any // keyword arguments
	// Tests, MinQuality, Style and Attempts are codegen.Options'.
	Tests      bool
	MinQuality codegen.QualityBar
	Style      string
	Attempts   int
	Model      string // "" for the LLM endpoint's configured model
	Limits     wasmpy.Limits
	ActorID    string
	ActorType  string
	// Tier is the trust tier the generated code runs in (see DefTier).
	Tier string
	// Caller is who asks: its maximum tier bounds Tier, and the record is
	// its own.
	Caller Caller
}

// DefExecution is how a generation went: its report (nil when nothing was
// asked of the LLM), its failure, and its provenance record.
type DefExecution struct {
	Report *codegen.FunctionReport
	Err    error // the generation's: wraps codegen.ErrGaveUp, an *llm.Error...
	Record *provenance.Record
}

// ErrNoLLM is Def's error on an executor with no LLM endpoint configured.
var ErrNoLLM = errors.New("runs: no LLM endpoint is configured")

// DefTier is the tier generated code gets when c asks for asked: "" means
// the strictest, as for `wasmpy gen` and `def`. The error is a *skills.Error:
// bad_request, or tier_forbidden for a tier above c's maximum.
func (e *Executor) DefTier(c Caller, asked string) (*tiers.Tier, error) {
	return e.callerTier(c, asked, func(asked string) (*tiers.Tier, error) {
		if asked == "" {
			return e.Tiers().Strictest(), nil
		}
		return e.execTier(asked)
	})
}

// Def generates the function req describes with the executor's LLM,
// through its sandbox, and records it as kind def, as `wasmpy def
// --record` does: the code hash is the code that ran, codegen its quality
// outcome. The error is for a request refused before anything was asked
// (a *skills.Error, bad_request: a bad signature or arguments, an actor) or the
// host's own failure; how the generation went is in the DefExecution.
func (e *Executor) Def(ctx context.Context, req DefRequest) (*DefExecution, error) {
	if !e.AllowsExternalCalls() {
		return nil, ErrNoLLM
	}
	if err := checkActor(req.ActorID, req.ActorType); err != nil {
		return nil, err
	}
	tier, err := e.DefTier(req.Caller, req.Tier)
	if err != nil {
		return nil, err
	}
	if req.Args == nil {
		req.Args = []any{}
	}
	if req.Kwargs == nil {
		req.Kwargs = map[string]any{}
	}
	policy := *tier
	if policy.AllowImports != nil {
		// The validator's and the call harness's own imports.
		policy.AllowImports = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(policy.AllowImports), codegen.HelperImports()...))))
	}
	in, err := json.Marshal(map[string]any{"signature": req.Signature, "args": req.Args, "kwargs": req.Kwargs})
	if err != nil {
		return nil, &skills.Error{Code: CodeBadRequest, Message: fmt.Sprintf("the arguments: %v", err)}
	}
	inputsHash, err := provenance.Hash(in)
	if err != nil {
		return nil, &skills.Error{Code: CodeBadRequest, Message: fmt.Sprintf("the arguments: %v", err)}
	}
	limits := req.Limits.Or(tier.Limits).Within(e.cfg.Sandbox.Limits)
	rec := NewRecord(e.sb, provenance.KindDef, e.sb.RunLimits(limits))
	rec.ActorID, rec.ActorType, rec.Tier, rec.InputsHash, rec.Caller = req.ActorID, req.ActorType, tier.Name, inputsHash, req.Caller.Owner
	// The record begins with the generation's first step: the signature
	// and the arguments have passed their checks then (a request refused
	// before is not an execution).
	begun, beginErr := false, error(nil)
	begin := func() {
		if !begun && e.cfg.Store != nil {
			beginErr = e.cfg.Store.Begin(ctx, rec)
		}
		begun = true
	}
	g, err := codegen.New(e.sb, llm.New(e.cfg.Sandbox.LLM), codegen.Options{Model: req.Model, Attempts: req.Attempts,
		AllowImports: tier.AllowImports, Validation: tier.Validation, Policy: policy.Apply, Limits: limits,
		Tests: req.Tests, MinQuality: req.MinQuality, Style: req.Style, CacheDir: e.cfg.CodeCache,
		Progress: func(codegen.Progress) { begin() }})
	if err != nil {
		return nil, &skills.Error{Code: CodeBadRequest, Message: trimCodegen(err)}
	}
	fr, genErr := g.Function(ctx, req.Signature, req.Args, req.Kwargs)
	if !begun && (errors.Is(genErr, codegen.ErrBadSignature) || errors.Is(genErr, codegen.ErrBadArguments)) {
		return nil, &skills.Error{Code: CodeBadRequest, Message: trimCodegen(genErr)}
	}
	if begin(); beginErr != nil {
		return nil, fmt.Errorf("runs: recording provenance: %w", beginErr)
	}
	var rep *codegen.Report
	if fr != nil {
		rep = &fr.Report
	}
	CompleteCodegenRecord(ctx, rec, rep, genErr)
	if e.cfg.Store != nil {
		if err := e.cfg.Store.Finish(context.WithoutCancel(ctx), rec); err != nil {
			return nil, fmt.Errorf("runs: recording provenance: %w", err)
		}
	}
	return &DefExecution{Report: fr, Err: genErr, Record: rec}, nil
}

func trimCodegen(err error) string {
	s := err.Error()
	if len(s) > len("codegen: ") && s[:len("codegen: ")] == "codegen: " {
		return s[len("codegen: "):]
	}
	return s
}

// CodegenFailure is the kind of a failed generation (err, with rep its
// report if any): the last attempt's outcome when every attempt failed
// (invalid, exception, timeout, tests_failed...), llm when the LLM could
// not be asked, wasmpy when wasmpy itself failed.
func CodegenFailure(err error, rep *codegen.Report) string {
	var ce *llm.Error
	switch {
	case errors.Is(err, codegen.ErrGaveUp) && rep != nil && len(rep.Attempts) > 0:
		return rep.Attempts[len(rep.Attempts)-1].Outcome
	case errors.As(err, &ce):
		return "llm"
	}
	return "wasmpy"
}

// CompleteCodegenRecord completes the record of a generation (gen, def):
// the code it settled on, its quality outcome, its last run; err is the
// generation's (its kind is recorded, never its message, which may quote
// the task).
func CompleteCodegenRecord(ctx context.Context, rec *provenance.Record, rep *codegen.Report, err error) {
	if rep != nil && len(rep.Attempts) > 0 {
		last := rep.Attempts[len(rep.Attempts)-1]
		rec.CodeHash = provenance.HashBytes([]byte(rep.Code))
		rec.Codegen = &provenance.Codegen{Attempts: len(rep.Attempts), Cached: rep.Cached,
			Validated: last.Outcome != codegen.OutcomeInvalid && len(last.Findings) == 0}
		for _, t := range last.Tests {
			switch t.Outcome {
			case codegen.TestPassed:
				rec.Codegen.TestsPassed++
			case codegen.TestFailed, codegen.TestError:
				rec.Codegen.TestsFailed++
			}
		}
	}
	if rep != nil && rep.Result != nil {
		CompleteRecord(ctx, rec, rep.Result, nil)
	} else {
		done := now()
		rec.FinishedAt, rec.Outcome, rec.Error = &done, provenance.OutcomeOK, "" // a dry run: validated, not run
	}
	if err != nil {
		rec.Outcome = CodegenFailure(err, rep)
		if rec.Outcome == "wasmpy" {
			rec.Outcome = provenance.OutcomeInternal
		}
		var ce *llm.Error
		if rec.Error = rec.Outcome; errors.As(err, &ce) {
			rec.Error = "LLMCallError"
		}
	}
}
