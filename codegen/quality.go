package codegen

import (
	"fmt"
	"strconv"
	"strings"
)

// Quality grades a generated function. Size and complexity are computed
// with Python's ast inside the sandbox.
type Quality struct {
	// Findings are the validation findings of the final code: empty, since
	// code with findings is not graded; earlier attempts' are in Attempts.
	Findings    []Finding `json:"findings"`
	TestsPassed int       `json:"tests_passed"`
	TestsFailed int       `json:"tests_failed"`
	// Lines counts the lines of code (not blank, not only a comment) of the
	// whole module; Statements its statements.
	Lines      int `json:"lines"`
	Statements int `json:"statements"`
	// Complexity is the function's cyclomatic complexity (1 + its decision
	// points); MaxComplexity the highest of every function in the code.
	Complexity    int  `json:"complexity"`
	MaxComplexity int  `json:"max_complexity"`
	TypeHints     bool `json:"type_hints"` // every parameter and the return are annotated
	Docstring     bool `json:"docstring"`
	// Problems are the thresholds of Options.MinQuality the code misses.
	Problems []string `json:"problems,omitempty"`
}

// QualityBar is what a generated function must reach; an attempt below it
// fails, with the shortfall as feedback. The zero value asks nothing.
type QualityBar struct {
	MaxComplexity int  // the function's cyclomatic complexity at most this (0 = any)
	MaxLines      int  // lines of code at most this (0 = any)
	MinTests      int  // at least this many tests passed
	TypeHints     bool // annotated parameters and return
	Docstring     bool // a docstring
}

// ParseQualityBar reads thresholds written as `wasmpy def --min-quality`
// takes them: comma-separated complexity=N, lines=N, tests=N, hints,
// docstring.
func ParseQualityBar(s string) (QualityBar, error) {
	var bar QualityBar
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		key, value, hasValue := strings.Cut(item, "=")
		n, err := strconv.Atoi(value)
		bad := hasValue && (err != nil || n < 0)
		switch {
		case key == "complexity" && hasValue && !bad:
			bar.MaxComplexity = n
		case key == "lines" && hasValue && !bad:
			bar.MaxLines = n
		case key == "tests" && hasValue && !bad:
			bar.MinTests = n
		case key == "hints" && !hasValue:
			bar.TypeHints = true
		case key == "docstring" && !hasValue:
			bar.Docstring = true
		default:
			return bar, fmt.Errorf("codegen: quality threshold %q: want complexity=N, lines=N, tests=N, hints or docstring", item)
		}
	}
	return bar, nil
}

// check returns the thresholds q misses.
func (b QualityBar) check(q *Quality) []string {
	var out []string
	if b.MaxComplexity > 0 && q.MaxComplexity > b.MaxComplexity {
		out = append(out, fmt.Sprintf("cyclomatic complexity %d is above %d: simplify the branching", q.MaxComplexity, b.MaxComplexity))
	}
	if b.MaxLines > 0 && q.Lines > b.MaxLines {
		out = append(out, fmt.Sprintf("%d lines of code, more than %d: make it shorter", q.Lines, b.MaxLines))
	}
	if q.TestsPassed < b.MinTests {
		out = append(out, fmt.Sprintf("%d tests passed, fewer than %d: add tests", q.TestsPassed, b.MinTests))
	}
	if b.TypeHints && !q.TypeHints {
		out = append(out, "type hints are missing: annotate every parameter and the return")
	}
	if b.Docstring && !q.Docstring {
		out = append(out, "the docstring is missing")
	}
	return out
}
