package petrinet

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/codegen"
	"github.com/wasmpy/wasmpy/internal/clip"
)

// Check parses every inscription (as statements) and guard (as an
// expression) with Python's ast inside sb. The error is a *Error naming
// the transition and the YAML line of each one that does not parse, or an
// error of the validator itself.
func (n *Net) Check(ctx context.Context, sb *wasmpy.Sandbox) error {
	return n.checkPython(ctx, sb, false)
}

// checkPython is Check; with runnable, it also refuses requirements and
// imports that the interpreter does not carry.
func (n *Net) checkPython(ctx context.Context, sb *wasmpy.Sandbox, runnable bool) error {
	// One snippet per inscription and guard; from[k] says whose.
	var snippets []codegen.Snippet
	type origin struct {
		transition int
		guard      bool
	}
	var from []origin
	for i, t := range n.Transitions {
		if strings.TrimSpace(t.Inscription) != "" {
			snippets = append(snippets, codegen.Snippet{Code: t.Inscription, ReportUnavailable: runnable})
			from = append(from, origin{i, false})
		}
		if g := strings.TrimSpace(t.Guard); g != "" {
			snippets = append(snippets, codegen.Snippet{Code: g, Expression: true, ReportUnavailable: runnable})
			from = append(from, origin{i, true})
		}
	}
	var ps problems
	if runnable {
		// The sandbox's package sets are the allowlist of requirements.
		for i, t := range n.Transitions {
			for _, r := range t.Requires {
				if err := sb.Require(r); err != nil {
					ps.add(lineOr(t.requiresLine, t.Line), element("transition", t.ID, i),
						"%s", strings.TrimPrefix(err.Error(), "wasmpy: "))
				}
			}
		}
	}
	if len(snippets) == 0 {
		return ps.err()
	}
	verdicts, err := codegen.ValidateEach(ctx, sb, snippets)
	if err != nil {
		return err
	}
	for k, v := range verdicts {
		i := from[k].transition
		t := n.Transitions[i]
		el := element("transition", t.ID, i)
		what, first := "inscription", t.inscriptionLine
		if from[k].guard {
			what, first = "guard", t.guardLine
		}
		for _, f := range v.Findings {
			line := 0
			if first > 0 {
				line = first + f.Line - 1
			}
			ps.add(lineOr(line, t.Line), el, "the %s does not parse: %s (line %d of the %s)", what, f.Message, f.Line, what)
		}
		for _, m := range v.Unavailable {
			ps.add(lineOr(first, t.Line), el, "the %s imports %s, which the sandbox does not provide: it has only the standard library and the package sets it mounts", what, m)
		}
	}
	return ps.err()
}

// RunOptions configure Net.Run. The zero value runs with the sandbox's
// limits and workspace and the net's step limit. The run is granted every
// built-in capability (the transitions' code was written to the prompts that
// promise them), plus the sandbox's Config.Grants.
type RunOptions struct {
	Limits    wasmpy.Limits
	Workspace string
	MaxSteps  int // overrides the net's max_steps when > 0
	// Policy, when set, shapes the net's run (a trust tier's Apply:
	// narrower limits, grants and imports).
	Policy func(wasmpy.Job) wasmpy.Job
}

// Outcome is how a net's run ended.
type Outcome struct {
	Marking   map[string]int  `json:"marking"`   // the final marking
	Steps     int             `json:"steps"`     // transitions fired
	Stopped   string          `json:"stopped"`   // "dead" (none enabled) or "step_limit"
	Fired     map[string]int  `json:"fired"`     // firings per transition
	Variables json.RawMessage `json:"variables"` // the JSON-compatible variables at the end
	// Result is the sandbox run's; when an inscription or guard failed, its
	// Error says how, and the fields above are zero.
	Result *wasmpy.Result `json:"-"`
}

// Run checks the net's Python (Check), refuses requirements and imports the
// sandbox cannot provide, builds the artifact and runs its files in sb, as
// `wasmpy exec DIR/main.py` runs what `net build` wrote.
// The error is for a refused net or the host's problems; a failure of the
// net's own code is in Outcome.Result.Error.
func (n *Net) Run(ctx context.Context, sb *wasmpy.Sandbox, opts RunOptions) (*Outcome, error) {
	if opts.MaxSteps < 0 {
		return nil, fmt.Errorf("petrinet: negative MaxSteps %d", opts.MaxSteps)
	}
	if err := n.checkPython(ctx, sb, true); err != nil {
		return nil, err
	}
	net := *n
	if opts.MaxSteps > 0 {
		net.MaxSteps = opts.MaxSteps
	}
	art, err := net.Build()
	if err != nil {
		return nil, err
	}
	// The artifact runs as its files, as `wasmpy exec DIR/main.py` runs them.
	job := wasmpy.Job{App: art.FS(), Code: string(art.file(Entrypoint)), Filename: wasmpy.AppMount + "/" + Entrypoint,
		Limits: opts.Limits, Workspace: opts.Workspace, Grants: wasmpy.Builtins()}
	if opts.Policy != nil {
		job = opts.Policy(job)
	}
	res, err := sb.Run(ctx, job)
	if err != nil {
		return nil, fmt.Errorf("petrinet: running net %s: %w", n.ID, err)
	}
	run := &Outcome{Result: res}
	if res.Error != nil {
		return run, nil
	}
	if err := json.Unmarshal(res.Output, run); err != nil || run.Marking == nil {
		return run, fmt.Errorf("petrinet: net %s: the entrypoint reported no marking (result %s)", n.ID, clip.Head(string(res.Output), 200))
	}
	return run, nil
}
