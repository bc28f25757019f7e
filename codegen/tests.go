package codegen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/internal/clip"
)

// Outcomes of a test.
const (
	TestPassed  = "passed"
	TestFailed  = "failed" // an assertion failed
	TestError   = "error"  // the test raised
	TestSkipped = "skipped"
)

// TestResult is one test of a generated function and how it ended.
type TestResult struct {
	Name    string `json:"name"`    // "TestAdd.test_zero", or "doctest 1: add(2, 3)"
	Source  string `json:"source"`  // "generated" (the model's) or "doctest" (the signature's examples)
	Outcome string `json:"outcome"` // TestPassed, TestFailed, TestError, TestSkipped
	Message string `json:"message,omitempty"`
}

// runTests runs a's tests and the signature's doctest examples against a's
// code in the sandbox, recording them in a and counting them in a.Quality.
// done is false when any failed or the run did.
func (g *Generator) runTests(ctx context.Context, sig *signatureInfo, a *Attempt) (done bool, err error) {
	in, err := json.Marshal(map[string]string{"function": sig.Name, "code": a.Code, "tests": a.TestCode, "docstring": sig.Docstring})
	if err != nil {
		return false, fmt.Errorf("codegen: tests input: %w", err)
	}
	res, err := g.sb.Run(ctx, g.policy(wasmpy.Job{Code: testrunSource, Filename: "<wasmpy-tests>", Stdin: bytes.NewReader(in),
		Limits: g.opts.Limits, Workspace: g.opts.Workspace, Grants: wasmpy.Builtins()}))
	if err != nil {
		return false, fmt.Errorf("codegen: running the tests: %w", err)
	}
	if res.Error != nil {
		a.Outcome, a.Error = string(res.Error.Kind), res.Error
		a.Feedback = "Running the tests failed. " + describeFailure(res)
		return false, nil
	}
	var report struct {
		LoadError string       `json:"load_error"`
		Tests     []TestResult `json:"tests"`
	}
	if err := json.Unmarshal(submittedValue(res), &report); err != nil || report.Tests == nil && report.LoadError == "" {
		return false, fmt.Errorf("codegen: the test runner's report is malformed: %q", clip.Head(string(submittedValue(res)), 200))
	}
	a.Tests = report.Tests
	if report.LoadError != "" {
		a.Outcome = OutcomeTestsFailed
		a.Feedback = report.LoadError
		return false, nil
	}
	var failed []string
	for _, t := range report.Tests {
		switch t.Outcome {
		case TestPassed:
			a.Quality.TestsPassed++
		case TestFailed, TestError:
			a.Quality.TestsFailed++
			failed = append(failed, fmt.Sprintf("- %s (%s, %s):\n%s", t.Name, t.Source, t.Outcome, indentText(clip.Tail(t.Message, 1500), "    ")))
		}
	}
	if len(failed) > 0 {
		a.Outcome = OutcomeTestsFailed
		a.Feedback = fmt.Sprintf("%d of %d tests failed:\n%s\nFix the function; fix a test only if the test itself is wrong (the docstring's examples are never wrong).",
			len(failed), len(report.Tests), strings.Join(failed, "\n"))
		return false, nil
	}
	return true, nil
}

func indentText(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}
