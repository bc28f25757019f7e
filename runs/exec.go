package runs

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/skills"
)

// The stable codes of a run's refusals and failures (a *skills.Error's Code).
const (
	CodeInvalidInput     = "invalid_input"     // the arguments do not match the input schema
	CodeApprovalRequired = "approval_required" // the skill needs an approval the request lacks
	CodeInvalidOutput    = "invalid_output"    // the handler's return value does not match the output schema
	CodeRunFailed        = "run_failed"        // the handler failed: Kind says how (exception, memory, fuel...)
	CodeTimeout          = "timeout"           // the run hit its time limit
	CodeBadRequest       = "bad_request"       // the request is malformed: an actor id or type too long or not printable
)

// Request asks for one execution of a skill.
type Request struct {
	Args      json.RawMessage // a JSON object; nil means {}
	ActorID   string
	ActorType string
	// Approved is the caller's explicit approval, needed by skills with
	// requires_approval or side_effect.
	Approved bool
	// Tier is the trust tier the run asks for (see SkillTier); "" means the
	// skill's, within the caller's maximum.
	Tier string
	// Caller is who asks, as the front end authenticated it: the tier
	// resolves from it (SkillTier), and the record is its.
	Caller Caller
}

// Execution is how one execution went.
type Execution struct {
	Record *provenance.Record
	// Result is the run, the record every caller shares; Result.Output is
	// the handler's return value.
	Result *wasmpy.Result
	// Error is nil when the output is valid.
	Error *skills.Error
}

//go:embed run_skill.py
var runSkillPy string

// Execute validates req's arguments, runs the handler in a fresh instance
// with the skill's limits, validates its output and records provenance.
//
// The error is a *skills.Error for a request refused before running
// (invalid_input, approval_required), or the host's own failure (a canceled
// ctx, the store); once the handler has run, how it went is in the
// Execution, including its failures.
func (e *Executor) Execute(ctx context.Context, s *skills.Skill, req Request) (*Execution, error) {
	inputsHash, err := Check(s, req)
	if err != nil {
		return nil, err
	}
	tier, err := e.SkillTier(req.Caller, s, req.Tier)
	if err != nil {
		return nil, err
	}
	args := req.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	module, fn := s.Entry()
	stdin, err := json.Marshal(map[string]any{"module": module, "function": fn, "source": s.Source, "args": args})
	if err != nil {
		return nil, err
	}
	rec := &provenance.Record{Kind: provenance.KindSkill, Skill: s.Name, Version: s.Version, ActorID: req.ActorID, ActorType: req.ActorType,
		Approved: req.Approved, CodeHash: s.CodeHash, InputsHash: inputsHash, Caller: req.Caller.Owner}
	job := e.apply(tier, wasmpy.Job{Code: runSkillPy, Filename: "<skill " + s.Name + ">", Stdin: bytes.NewReader(stdin),
		Limits: s.Limits, Grants: s.Grants(), HTTP: s.HTTP}, "json", "sys", "types") // run_skill.py's imports
	return e.run(ctx, rec, job, e.sb.Run, func(x *Execution) {
		out := x.Result.Output
		if x.Error != nil {
			return
		}
		vs, err := s.ValidateOutput(out)
		switch {
		case err != nil:
			x.Error = &skills.Error{Code: CodeInvalidOutput, Message: "output: " + err.Error()}
		case vs != nil:
			x.Error = skills.SchemaError(CodeInvalidOutput, "the output of "+s.Handler, vs)
		}
	})
}

// Check does what Execute does before running: the actor, the approval,
// then the arguments against the input schema. It returns the arguments'
// hash, or a *skills.Error (bad_request for the actor, approval_required,
// invalid_input).
func Check(s *skills.Skill, req Request) (inputsHash string, err error) {
	if err := checkActor(req.ActorID, req.ActorType); err != nil {
		return "", err
	}
	if s.NeedsApproval() && !req.Approved {
		return "", &skills.Error{Code: CodeApprovalRequired, Message: fmt.Sprintf(
			"skill %s needs an explicit approval", s.Name)}
	}
	args := req.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	inputsHash, err = provenance.Hash(args)
	if err != nil {
		return "", &skills.Error{Code: CodeInvalidInput, Message: "args: " + strings.TrimPrefix(err.Error(), "provenance: canonical JSON: ")}
	}
	vs, err := s.ValidateInput(args)
	if err != nil {
		return "", &skills.Error{Code: CodeInvalidInput, Message: "args: " + err.Error()}
	}
	if vs != nil {
		return "", skills.SchemaError(CodeInvalidInput, "args", vs)
	}
	return inputsHash, nil
}

// ExecRequest asks to run raw code (POST /exec).
type ExecRequest struct {
	Code      string
	Args      []string // sys.argv[1:]
	Stdin     string
	Limits    wasmpy.Limits
	ActorID   string
	ActorType string
	// Stdout and Stderr, when set, get the output as the code writes it.
	Stdout, Stderr io.Writer
	// Workspace is the directory the run reads as its workspace (it writes
	// to an overlay, returned in the Result); "" means the sandbox's. A
	// session turn with one keeps no files in the session
	// (wasmpy.Job.DetachFiles): the caller owns the directory and carries
	// each turn's files into it, and the next turn reads it as it is then.
	Workspace string
	// Tier is the trust tier the run asks for (see ExecTier); "" means the
	// executor's default, within the caller's maximum. A session's turns
	// have the session's.
	Tier string
	// Caller is who asks, as the front end authenticated it: the tier
	// resolves from it (ExecTier), its sessions are its own, and so is the
	// record.
	Caller Caller
}

// Exec runs raw code in a fresh pure-compute instance (the only capability
// is submit_result) and records its provenance like a skill's, with
// Skill "". Its inputs hash covers {"args", "stdin"}. An actor that is too
// long or not printable is refused with a *skills.Error (bad_request).
func (e *Executor) Exec(ctx context.Context, req ExecRequest) (*Execution, error) {
	tier, err := e.ExecTier(req.Caller, req.Tier)
	if err != nil {
		return nil, err
	}
	rec, job, err := execJob(req, provenance.KindExec)
	if err != nil {
		return nil, err
	}
	job.Grants = []wasmpy.Capability{wasmpy.SubmitResult}
	return e.run(ctx, rec, e.apply(tier, job), e.sb.Run, nil)
}

// execJob checks req and makes its record and job, granted nothing yet.
func execJob(req ExecRequest, kind string) (*provenance.Record, wasmpy.Job, error) {
	if req.Code == "" {
		return nil, wasmpy.Job{}, wasmpy.ErrNoCode
	}
	if err := checkActor(req.ActorID, req.ActorType); err != nil {
		return nil, wasmpy.Job{}, err
	}
	if req.Args == nil {
		req.Args = []string{}
	}
	in, err := json.Marshal(map[string]any{"args": req.Args, "stdin": req.Stdin})
	if err != nil {
		return nil, wasmpy.Job{}, err
	}
	inputsHash, err := provenance.Hash(in)
	if err != nil {
		return nil, wasmpy.Job{}, err
	}
	rec := &provenance.Record{Kind: kind, ActorID: req.ActorID, ActorType: req.ActorType, Caller: req.Caller.Owner,
		CodeHash: provenance.HashBytes([]byte(req.Code)), InputsHash: inputsHash}
	job := wasmpy.Job{Code: req.Code, Filename: "<exec>", Args: req.Args, Stdin: strings.NewReader(req.Stdin), Limits: req.Limits,
		Stdout: req.Stdout, Stderr: req.Stderr, Workspace: req.Workspace}
	return rec, job, nil
}

// run records rec as running, runs job with do (the sandbox's Run, or a
// session's), classifies the outcome (check may add an output error, or
// complete rec), and completes rec.
func (e *Executor) run(ctx context.Context, rec *provenance.Record, job wasmpy.Job,
	do func(context.Context, wasmpy.Job) (*wasmpy.Result, error), check func(*Execution)) (*Execution, error) {
	started := NewRecord(e.sb, rec.Kind, e.sb.RunLimits(job.Limits))
	rec.Tier = job.Tier
	rec.ExecutionID, rec.Interpreter, rec.Packages, rec.Limits = started.ExecutionID, started.Interpreter, started.Packages, started.Limits
	rec.Outcome, rec.StartedAt, rec.HostCalls = started.Outcome, started.StartedAt, started.HostCalls
	if e.cfg.Store != nil {
		if err := e.cfg.Store.Begin(ctx, rec); err != nil {
			return nil, fmt.Errorf("runs: recording provenance: %w", err)
		}
	}
	res, runErr := do(ctx, job)
	if runErr == nil && res.Error != nil && res.Error.Kind == wasmpy.KindInterrupted && ctx.Err() != nil {
		runErr = ctx.Err() // the caller went away
	}
	CompleteRecord(ctx, rec, res, runErr)
	x := &Execution{Record: rec, Result: res}
	if runErr == nil {
		x.Error = runError(res)
		if check != nil {
			check(x)
		}
		if x.Error != nil && x.Error.Code == CodeInvalidOutput {
			rec.Outcome, rec.Error = provenance.OutcomeInvalidOutput, x.Error.Message
		}
	}
	if e.cfg.Store != nil {
		// Record the end even if the caller has gone.
		if err := e.cfg.Store.Finish(context.WithoutCancel(ctx), rec); err != nil {
			return nil, fmt.Errorf("runs: recording provenance: %w", err)
		}
	}
	if runErr != nil {
		return nil, runErr
	}
	return x, nil
}

// runError classifies a failed run; nil for a successful one.
func runError(res *wasmpy.Result) *skills.Error {
	f := res.Error
	switch {
	case f == nil:
		return nil
	case f.Kind == wasmpy.KindException && f.Type == "InvalidOutput": // raised by run_skill.py
		return &skills.Error{Code: CodeInvalidOutput, Message: f.Message}
	case f.Kind == wasmpy.KindTimeout:
		return &skills.Error{Code: CodeTimeout, Kind: f.Kind, Message: f.Message}
	}
	msg := f.Message
	if f.Type != "" {
		msg = f.Type + ": " + msg
	}
	return &skills.Error{Code: CodeRunFailed, Kind: f.Kind, Message: msg}
}
