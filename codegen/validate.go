package codegen

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/internal/clip"
	"github.com/wasmpy/wasmpy/tiers"
)

//go:embed validator.py
var validatorSource string

// DefaultAllowImports are the modules generated code may import unless
// Options.AllowImports says otherwise: the pure-compute standard library
// (tiers.PureComputeImports).
func DefaultAllowImports() []string { return tiers.PureComputeImports() }

// DefaultForbiddenNames are the builtins generated code may not use unless
// Options.ForbiddenNames says otherwise.
func DefaultForbiddenNames() []string {
	return []string{"open", "eval", "exec", "compile", "__import__", "globals", "locals", "vars", "breakpoint"}
}

// HelperImports are the modules codegen's own validator, the def harness
// and the test runner import in the sandbox. A sandbox whose
// Config.AllowImports is set must allow them; checking a net's requirements
// also needs importlib.
func HelperImports() []string {
	return []string{"ast", "doctest", "inspect", "io", "json", "sys", "traceback", "unittest"}
}

// Rules are the checks Validate applies. The zero value checks syntax only.
type Rules struct {
	// AllowImports, when not nil, are the only top-level modules the code may
	// import (wasmpy is always allowed).
	AllowImports []string
	// ForbiddenNames are names the code may not use (read), e.g. "eval".
	ForbiddenNames []string
	// ForbidDunder refuses dunder names and attributes that reach the
	// interpreter's internals (__class__, __subclasses__, __globals__, ...)
	// and frame introspection (f_globals, tb_frame, ...). Dunders ordinary
	// code uses (__init__, __name__, __eq__, ...) stay allowed.
	ForbidDunder bool
	// RequireCall, when set, must be called somewhere (e.g. "submit_result").
	RequireCall string
	// RequireDef, when set, must be defined by a top-level def.
	RequireDef string
	// RequireParams, when not nil, are the parameter names RequireDef's def
	// must have, in order.
	RequireParams []string
}

// Finding is one problem validation found, worded for the model to act on.
type Finding struct {
	Line    int    `json:"line"` // 1-based; in the code checked
	Col     int    `json:"col,omitempty"`
	Rule    string `json:"rule"` // syntax, import, name, dunder, result, function, extract
	Message string `json:"message"`
}

func (f Finding) String() string { return fmt.Sprintf("line %d: %s", f.Line, f.Message) }

// Validate parses code with Python's own ast module inside sb and returns
// what breaks the rules; no findings means valid. The code is passed as data
// and never executed. The error is for the validator failing to run.
//
// Validation is fast feedback, not a security boundary: the sandbox is.
func Validate(ctx context.Context, sb *wasmpy.Sandbox, code string, rules Rules) ([]Finding, error) {
	v, err := ValidateEach(ctx, sb, []Snippet{{Code: code, Rules: rules}})
	if err != nil {
		return nil, err
	}
	return v[0].Findings, nil
}

// Snippet is one piece of code for ValidateEach.
type Snippet struct {
	Code string
	// Expression parses Code as one expression (a guard, say), not statements.
	Expression bool
	Rules      Rules
	// ReportUnavailable also asks which of the code's imports the
	// interpreter does not carry.
	ReportUnavailable bool
}

// Verdict is what ValidateEach found in one Snippet.
type Verdict struct {
	Findings    []Finding
	Unavailable []string // with Snippet.ReportUnavailable
}

// ValidateEach is Validate for many snippets in one sandbox run, which costs
// about as much as one; the verdicts are in the snippets' order.
func ValidateEach(ctx context.Context, sb *wasmpy.Sandbox, snippets []Snippet) ([]Verdict, error) {
	items := make([]validateItem, len(snippets))
	for i, s := range snippets {
		mode := "exec"
		if s.Expression {
			mode = "eval"
		}
		items[i] = itemFor(strconv.Itoa(i), s.Code, mode, s.Rules)
		items[i].ReportUnavailable = s.ReportUnavailable
	}
	out, err := validate(ctx, sb, items)
	if err != nil {
		return nil, err
	}
	verdicts := make([]Verdict, len(out.Items))
	for i, it := range out.Items {
		verdicts[i] = Verdict{Findings: it.Findings, Unavailable: it.Unavailable}
	}
	return verdicts, nil
}

// validateItem is one piece of code for validator.py.
type validateItem struct {
	ID             string   `json:"id"`
	Code           string   `json:"code"`
	Mode           string   `json:"mode"` // exec, eval, signature
	AllowImports   []string `json:"allow_imports"`
	ForbiddenNames []string `json:"forbidden_names"`
	ForbidDunder   bool     `json:"forbid_dunder"`
	RequireCall    string   `json:"require_call"`
	RequireDef     string   `json:"require_def"`
	RequireParams  []string `json:"params"`
	// Call, for a signature, asks whether these arguments bind to it.
	Call json.RawMessage `json:"call,omitempty"`
	// ReportUnavailable asks which of the code's imports the interpreter lacks.
	ReportUnavailable bool `json:"report_unavailable"`
}

func itemFor(id, code, mode string, r Rules) validateItem {
	return validateItem{ID: id, Code: code, Mode: mode, AllowImports: r.AllowImports, ForbiddenNames: r.ForbiddenNames,
		ForbidDunder: r.ForbidDunder, RequireCall: r.RequireCall, RequireDef: r.RequireDef, RequireParams: r.RequireParams}
}

type validateOutput struct {
	Items []struct {
		ID          string    `json:"id"`
		Findings    []Finding `json:"findings"`
		Imports     []string  `json:"imports"`
		Unavailable []string  `json:"unavailable"`
		Function    string    `json:"function"`
		// For a signature; for code with RequireDef, its parts and grades.
		Signature *signatureInfo `json:"signature"`
		Parts     *functionParts `json:"parts"`
		Quality   *Quality       `json:"quality"`
	} `json:"items"`
}

// validatorLimits bound a validator run; the fuel budget is the sandbox's.
var validatorLimits = wasmpy.Limits{Timeout: time.Minute, Memory: 256 << 20, Output: 8 << 20}

// validate runs validator.py once over items.
func validate(ctx context.Context, sb *wasmpy.Sandbox, items []validateItem) (*validateOutput, error) {
	in, err := json.Marshal(map[string]any{"items": items})
	if err != nil {
		return nil, fmt.Errorf("codegen: validator input: %w", err)
	}
	res, err := sb.Run(ctx, wasmpy.Job{Code: validatorSource, Filename: "<wasmpy-validator>", Stdin: bytes.NewReader(in), Limits: validatorLimits})
	if err != nil {
		return nil, fmt.Errorf("codegen: validator: %w", err)
	}
	if res.Error != nil {
		msg := res.Error.Message
		if res.Error.Type != "" {
			msg = res.Error.Type + ": " + msg
		}
		hint := ""
		if strings.Contains(res.Error.Type, "ImportError") {
			hint = fmt.Sprintf(" (a sandbox with AllowImports must allow %s)", strings.Join(HelperImports(), ", "))
		}
		return nil, fmt.Errorf("codegen: the validator failed in the sandbox: %s: %s%s", res.Error.Kind, msg, hint)
	}
	var out validateOutput
	line := bytes.TrimSpace([]byte(res.Stdout))
	if i := bytes.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	if err := json.Unmarshal(line, &out); err != nil || len(out.Items) != len(items) {
		return nil, fmt.Errorf("codegen: the validator's report is malformed: %q", clip.Head(res.Stdout, 200))
	}
	for i := range out.Items {
		if out.Items[i].Findings == nil {
			out.Items[i].Findings = []Finding{}
		}
		if q := out.Items[i].Quality; q != nil {
			q.Findings = out.Items[i].Findings
		}
	}
	return &out, nil
}

// describeFindings words findings for the model, quoting each line.
func describeFindings(code string, findings []Finding) string {
	lines := strings.Split(code, "\n")
	var b strings.Builder
	for _, f := range findings {
		fmt.Fprintf(&b, "- %s\n", f)
		if f.Line >= 1 && f.Line <= len(lines) {
			if src := strings.TrimRight(lines[f.Line-1], " \t\r"); strings.TrimSpace(src) != "" {
				fmt.Fprintf(&b, "    %s\n", clip.Head(src, 200))
			}
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
