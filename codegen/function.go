package codegen

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/internal/clip"
)

//go:embed testrun.py
var testrunSource string

// FunctionReport is what Function did: the Report, the function's name, the
// value it returned, and the last attempt's tests and quality.
type FunctionReport struct {
	Report
	Name  string          `json:"function"`
	Value json.RawMessage `json:"value"` // JSON; null when the function did not run
	// TestCode is the model's unittest module (empty without Options.Tests).
	TestCode string `json:"test_code,omitempty"`
	// Tests are the last attempt's tests (the model's and the signature's
	// doctest examples) and how each ended; empty when none ran.
	Tests []TestResult `json:"tests"`
	// Quality grades the last attempt's code; nil when it never validated.
	Quality *Quality `json:"quality"`
}

// ErrBadSignature is wrapped by Function's error for a signature that is
// not one Python def line.
var ErrBadSignature = errors.New("codegen: bad signature")

// ErrBadArguments is wrapped by Function's error for arguments that do not
// fit the signature. Nothing was asked of the LLM, and the cache is as it was.
var ErrBadArguments = errors.New("codegen: the arguments do not fit the signature")

// Function asks for the body of the function signature (a def line, with or
// without a docstring and a body), validates the code, renders the final
// function from the code template (Options.Style), runs its tests (the
// model's, with Options.Tests, and the docstring's doctest examples), grades
// it (Quality, held to Options.MinQuality), and calls it in the sandbox with
// args and kwargs (passed as JSON on stdin, not pasted into the source).
// Failing validation, tests or grades are fed back to the model, as a failed
// run is. Report.Code is the final source; Value is the JSON of what the
// function returned. The cache is keyed by the signature (and whether tests
// are asked for), not the arguments; cached code is tested again before use.
//
// args and kwargs are checked against the signature first: a mismatch
// wraps ErrBadArguments, before any LLM call.
func (g *Generator) Function(ctx context.Context, signature string, args []any, kwargs map[string]any) (*FunctionReport, error) {
	signature = strings.TrimSpace(strings.ReplaceAll(signature, "\r\n", "\n"))
	if signature == "" {
		return nil, fmt.Errorf("%w: it is empty", ErrBadSignature)
	}
	if args == nil {
		args = []any{}
	}
	if kwargs == nil {
		kwargs = map[string]any{}
	}
	call, err := json.Marshal(map[string]any{"args": args, "kwargs": kwargs})
	if err != nil {
		return nil, fmt.Errorf("codegen: the arguments are not JSON: %w", err)
	}
	item := validateItem{ID: "signature", Code: signature, Mode: "signature"}
	if !g.opts.DryRun {
		item.Call = call // a dry run calls nothing
	}
	out, err := validate(ctx, g.sb, []validateItem{item})
	if err != nil {
		return nil, err
	}
	if f := out.Items[0].Findings; len(f) > 0 {
		if f[0].Rule == "call" {
			return nil, fmt.Errorf("%w: %s", ErrBadArguments, strings.TrimPrefix(f[0].Message, "the arguments do not fit "))
		}
		return nil, fmt.Errorf("%w: %s", ErrBadSignature, f[0])
	}
	sig := out.Items[0].Signature
	name := sig.Name
	rules := g.rules()
	rules.RequireDef = name
	rules.ForbiddenNames = append(slices.Clone(rules.ForbiddenNames), "submit_result")
	argsJSON, _ := json.Marshal(args)
	kwargsJSON, _ := json.Marshal(kwargs)
	scaffold, err := g.code.render("tests", codeData{Name: name})
	if err != nil {
		return nil, err
	}
	fn := &functionSpec{sig: sig, rules: rules}
	rep, err := g.generate(ctx, spec{
		kind:    "function",
		prompts: g.function,
		data:    promptData{Signature: signature, Function: name, Tests: g.opts.Tests, TestScaffold: scaffold, Doctests: sig.Doctests},
		rules:   rules,
		finish:  fn,
		job: func(code string) wasmpy.Job {
			return g.policy(wasmpy.Job{Code: code + harness(name), Filename: "generated.py", Stdin: bytes.NewReader(append(call, '\n')),
				Limits: g.opts.Limits, Workspace: g.opts.Workspace, Grants: wasmpy.Builtins()})
		},
		requireResult: true,
		callNote: fmt.Sprintf("Called as %s(*args, **kwargs) with args = %s and kwargs = %s:\n",
			name, clip.Head(string(argsJSON), 500), clip.Head(string(kwargsJSON), 500)),
	})
	if rep == nil {
		return nil, err
	}
	fr := &FunctionReport{Report: *rep, Name: name, Value: json.RawMessage("null"), Tests: []TestResult{}}
	if n := len(rep.Attempts); n > 0 {
		last := rep.Attempts[n-1]
		fr.TestCode, fr.Quality = last.TestCode, last.Quality
		if last.Tests != nil {
			fr.Tests = last.Tests
		}
	}
	if err == nil && rep.Result != nil {
		fr.Value = submittedValue(rep.Result)
	}
	return fr, err
}

// harness calls the generated function with the JSON arguments on stdin and
// submits what it returns. It is appended after validation, so the
// generated code's line numbers stay its own.
func harness(name string) string {
	return "\n\n# --- wasmpy def: call " + name + " with the JSON arguments on stdin ---\n" +
		"import json as _wasmpy_json\n" +
		"_wasmpy_call = _wasmpy_json.loads(input())\n" +
		"submit_result(" + name + "(*_wasmpy_call[\"args\"], **_wasmpy_call[\"kwargs\"]))\n"
}

// functionSpec is what Function adds to an attempt between validation and
// the call: the final code, the tests, the grades.
type functionSpec struct {
	sig   *signatureInfo
	rules Rules
}

// finish validates a's code, renders the final function from the code
// template (code from the cache is final already), checks the final code
// and the tests, runs the tests and grades the function. done is false
// when a failed (a.Outcome and a.Feedback say why).
func (f *functionSpec) finish(ctx context.Context, g *Generator, a *Attempt, progress func(step string)) (done bool, err error) {
	if a.Source == "llm" {
		rules := f.rules
		rules.RequireParams = f.sig.names()
		items, err := validate(ctx, g.sb, []validateItem{itemFor("code", a.Code, "exec", rules)})
		if err != nil {
			return false, err
		}
		if findings := items.Items[0].Findings; len(findings) > 0 {
			a.Outcome, a.Findings = OutcomeInvalid, findings
			a.Feedback = "The code did not pass the sandbox's checks:\n" + describeFindings(a.Code, findings)
			return false, nil
		}
		final, err := g.renderFunction(f.sig, items.Items[0].Parts)
		if err != nil {
			return false, err
		}
		a.Code = final
	}
	check := []validateItem{itemFor("code", a.Code, "exec", f.rules)}
	if a.TestCode != "" {
		testRules := Rules{AllowImports: append(slices.Clone(f.rules.AllowImports), "unittest"),
			ForbiddenNames: f.rules.ForbiddenNames, ForbidDunder: f.rules.ForbidDunder}
		check = append(check, itemFor("tests", a.TestCode, "exec", testRules))
	}
	out, err := validate(ctx, g.sb, check)
	if err != nil {
		return false, err
	}
	if findings := out.Items[0].Findings; len(findings) > 0 {
		if a.Source == "llm" {
			// The model's code passed; the template broke it.
			return false, fmt.Errorf("codegen: the code template rendered invalid code: %s", findings[0])
		}
		a.Outcome, a.Findings = OutcomeInvalid, findings
		a.Feedback = "The code did not pass the sandbox's checks:\n" + describeFindings(a.Code, findings)
		return false, nil
	}
	a.Quality = out.Items[0].Quality
	if a.Quality == nil {
		return false, errors.New("codegen: the validator graded nothing")
	}
	if g.opts.Tests && a.TestCode == "" {
		a.Outcome = OutcomeNoTests
		a.Feedback = "The reply held no tests. After the function, reply with a second ```python block holding its unittest.TestCase tests."
		return false, nil
	}
	if len(out.Items) > 1 {
		if findings := out.Items[1].Findings; len(findings) > 0 {
			a.Outcome, a.Findings = OutcomeInvalid, findings
			a.Feedback = "The tests did not pass the sandbox's checks:\n" + describeFindings(a.TestCode, findings)
			return false, nil
		}
	}
	if !g.opts.DryRun && (a.TestCode != "" || f.sig.Doctests > 0) {
		progress(StepTesting)
		if done, err := g.runTests(ctx, f.sig, a); err != nil || !done {
			return false, err
		}
	}
	if problems := g.opts.MinQuality.check(a.Quality); len(problems) > 0 {
		a.Quality.Problems = problems
		a.Outcome = OutcomeLowQuality
		a.Feedback = "The function works but misses the quality bar:\n- " + strings.Join(problems, "\n- ")
		return false, nil
	}
	return true, nil
}

// signatureInfo is what the validator reads from a def line.
type signatureInfo struct {
	Name   string `json:"name"`
	Typed  string `json:"typed"` // the parameters as written
	Plain  string `json:"plain"` // without annotations
	Params []struct {
		Name       string `json:"name"`
		Annotation string `json:"annotation"`
	} `json:"params"`
	Returns   string      `json:"returns"`
	Docstring string      `json:"docstring"`
	Sections  docSections `json:"sections"`
	Doctests  int         `json:"doctests"`
}

func (s *signatureInfo) names() []string {
	names := make([]string, len(s.Params))
	for i, p := range s.Params {
		names[i] = p.Name
	}
	return names
}

// docSections are a Google-style docstring's parts.
type docSections struct {
	Description string            `json:"description"`
	Args        map[string]string `json:"args"`
	Returns     string            `json:"returns"`
}

// functionParts are the generated code split around the function.
type functionParts struct {
	Before   string      `json:"before"`
	After    string      `json:"after"`
	Body     string      `json:"body"`
	Sections docSections `json:"sections"`
}

// submittedValue is the value a run handed to submit_result.
func submittedValue(res *wasmpy.Result) json.RawMessage {
	if len(res.Output) == 0 {
		return json.RawMessage("null")
	}
	return res.Output
}
