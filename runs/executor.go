package runs

import (
	"context"
	"errors"
	"fmt"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/skills"
	"github.com/wasmpy/wasmpy/tiers"
)

// ExecutorConfig configures an Executor.
type ExecutorConfig struct {
	// Sandbox configures the one sandbox every run shares: interpreter,
	// cache, LLM, default limits. Its Grants must be empty: a skill's run is
	// granted what its safety flags ask for, and raw code submit_result.
	Sandbox wasmpy.Config
	// Store records provenance (a provenance.Store is one); nil records
	// none.
	Store provenance.Recorder
	// Sessions keeps sessions (a provenance.Store does); nil keeps them in
	// memory only, lost with the process. Sandbox.Sessions bounds them.
	Sessions SessionStore
	// Tiers are the trust tiers runs get (see SkillTier and ExecTier); nil
	// means tiers.Defaults(). Sandbox.Limits, where set, are ceilings on
	// theirs.
	Tiers *tiers.Set
	// DefaultTier is the tier of raw code (Exec, sessions) whose request
	// names none; "" means testing (a session's turns use the workspace),
	// or the strictest where Tiers has no testing.
	DefaultTier string
	// Budgets bound what sessions hold, in all and per caller; zero
	// fields: DefaultSessionBudgets.
	Budgets SessionBudgets
	// CodeCache is the directory of codegen's code cache for Def ("" for
	// none): the code that worked, reused (and tested again) for the same
	// signature and model.
	CodeCache string
}

// Executor runs skills, each run in a fresh instance of one sandbox with
// only the capabilities its safety flags ask for, and records their
// provenance. It is safe for concurrent use.
type Executor struct {
	cfg      ExecutorConfig
	sb       *wasmpy.Sandbox
	sessions sessions
}

// ErrExecutorGrants is returned by NewExecutor for a Sandbox config with
// Grants: they would reach every skill, whatever its safety flags say.
var ErrExecutorGrants = errors.New("runs: ExecutorConfig.Sandbox.Grants must be empty: a skill's grants come from its safety flags")

// NewExecutor opens the sandbox, so a missing interpreter is reported here.
func NewExecutor(ctx context.Context, cfg ExecutorConfig) (*Executor, error) {
	if len(cfg.Sandbox.Grants) > 0 {
		return nil, ErrExecutorGrants
	}
	if cfg.DefaultTier != "" {
		if cfg.Tiers == nil {
			cfg.Tiers = tiers.Defaults()
		}
		if _, err := cfg.Tiers.Lookup(cfg.DefaultTier); err != nil {
			return nil, fmt.Errorf("runs: ExecutorConfig.DefaultTier: %w", err)
		}
	}
	if cfg.Sandbox.MaxConcurrent == 0 {
		// The front ends admit runs themselves (slots, queue, request
		// timeout): a second queue inside the sandbox would hold runs they
		// admitted past their --max-concurrent.
		cfg.Sandbox.MaxConcurrent = -1
	}
	sb, err := wasmpy.New(ctx, cfg.Sandbox)
	if err != nil {
		return nil, err
	}
	return &Executor{cfg: cfg, sb: sb}, nil
}

// Checker is the sandbox, for LoadOptions.Checker: its jobs are granted
// nothing unless they ask.
func (e *Executor) Checker() *wasmpy.Sandbox { return e.sb }

// Interpreter describes the interpreter runs use.
func (e *Executor) Interpreter() wasmpy.InterpreterInfo { return e.sb.Interpreter() }

// AllowsExternalCalls reports whether ask_llm has an endpoint, for
// LoadOptions.AllowExternalCalls.
func (e *Executor) AllowsExternalCalls() bool { return e.cfg.Sandbox.LLM.BaseURL != "" }

// Lookup returns the provenance record of an execution c asked for (an
// admin's: any), or provenance.ErrNotFound: another caller's record is
// not told apart from one that does not exist.
func (e *Executor) Lookup(ctx context.Context, c Caller, id string) (*provenance.Record, error) {
	if e.cfg.Store == nil || !provenance.ValidID(id) {
		return nil, provenance.ErrNotFound
	}
	rec, err := e.cfg.Store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !c.Admin && rec.Caller != c.Owner {
		return nil, provenance.ErrNotFound
	}
	return rec, nil
}

// Describe is the skill's public description, with the tier and limits its
// runs get from this executor unless a request asks for a stricter tier.
func (e *Executor) Describe(s *skills.Skill) skills.Info {
	t, err := e.SkillTier(Caller{}, s, "")
	if err != nil { // a skill.yaml tier this executor lacks: describe it under the strictest
		t = e.Tiers().Strictest()
	}
	return s.Describe(t, e.apply(t, wasmpy.Job{Limits: s.Limits}).Limits.Or(wasmpy.DefaultLimits()))
}

// Close releases the sandbox.
func (e *Executor) Close(ctx context.Context) error { return e.sb.Close(ctx) }
