package codegen

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/internal/testing/llmtest"
)

// pyWithTests is a reply holding a function and its tests, as the prompt asks.
func pyWithTests(code, tests string) llmtest.Reply {
	return llmtest.Reply{Content: "The function:\n```python\n" + code + "\n```\nIts tests:\n```python\n" + tests + "\n```\n"}
}

const addTests = `import unittest


class TestAdd(unittest.TestCase):
    def test_small(self):
        # Arrange
        a, b = 2, 3
        # Act
        result = add(a, b)
        # Assert
        self.assertEqual(result, 5)

    def test_negative(self):
        self.assertEqual(add(-2, -3), -5)`

// The final function is rendered from the code template: the user's def
// line and docstring, Args and Returns sections, the model's helpers and body.
func TestFunctionRendered(t *testing.T) {
	sig := "def add(a: int, b: int = 0) -> int:\n    \"\"\"Adds two numbers.\n\n    Args:\n        a: the first\n    \"\"\""
	model := "import math\n\n\ndef add(a, b=0):\n  \"\"\"Adds.\n\n  Args:\n    a: ignored, the user's wins\n    b: the second\n\n  Returns:\n    int: the sum\n  \"\"\"\n  # the sum\n  return math.fsum([a, b]) and a + b"
	want := map[string]string{
		"typed": `import math


def add(a: int, b: int=0) -> int:
    """Adds two numbers.

    Args:
        a (int): the first
        b (int): the second

    Returns:
        int: the sum
    """
    # the sum
    return math.fsum([a, b]) and a + b
`,
		"simple": `import math


def add(a, b=0):
    """Adds two numbers.

    Args:
        a: the first
        b: the second

    Returns:
        the sum
    """
    # the sum
    return math.fsum([a, b]) and a + b
`,
	}
	for style, code := range want {
		t.Run(style, func(t *testing.T) {
			srv := llmtest.New(t, py(model))
			fr, err := newGen(t, srv, Options{Style: style}).Function(context.Background(), sig, []any{2, 3}, nil)
			require.NoError(t, err)
			require.Equal(t, code, fr.Code)
			require.JSONEq(t, "5", string(fr.Value))
			q := fr.Quality
			require.NotNil(t, q)
			require.Equal(t, style == "typed", q.TypeHints)
			require.True(t, q.Docstring)
			require.Equal(t, 2, q.Complexity, "1 + the `and`")
			require.Equal(t, 3, q.Lines, "import, def, return")
		})
	}
}

// Without Tests, tests the model adds anyway are left out: the function is
// the other block, even when the tests' block is longer.
func TestFunctionUnaskedTests(t *testing.T) {
	srv := llmtest.New(t, pyWithTests("def add(a, b):\n    return a + b", addTests))
	fr, err := newGen(t, srv, Options{}).Function(context.Background(), "def add(a, b):", []any{1, 2}, nil)
	require.NoError(t, err)
	require.JSONEq(t, "3", string(fr.Value))
	require.Empty(t, fr.TestCode)
	require.Empty(t, fr.Tests)
}

// A code template override replaces the templates it defines.
func TestFunctionCodeTemplateOverride(t *testing.T) {
	srv := llmtest.New(t, py("def double(x):\n    return 2 * x"))
	override := `{{define "simple"}}# generated
def {{.Name}}({{.Params}}):
{{.Body}}
{{end}}`
	fr, err := newGen(t, srv, Options{Style: "simple", CodeTemplate: override}).Function(context.Background(), "def double(x: int) -> int:", []any{4}, nil)
	require.NoError(t, err)
	require.Equal(t, "# generated\ndef double(x):\n    return 2 * x\n", fr.Code)
	require.JSONEq(t, "8", string(fr.Value))

	_, err = New(testSandbox(t), newGen(t, srv, Options{}).llm, Options{CodeTemplate: "no defines"})
	require.ErrorContains(t, err, `defines none of "typed", "simple", "tests"`)
}

// With Tests, the model's unittest tests run in the sandbox; a failing test
// is fed back and drives a retry; the report lists every test.
func TestFunctionTests(t *testing.T) {
	srv := llmtest.New(t,
		pyWithTests("def add(a, b):\n    return abs(a) + abs(b)", addTests),
		pyWithTests("def add(a, b):\n    return a + b", addTests))
	fr, err := newGen(t, srv, Options{Tests: true}).Function(context.Background(), "def add(a: int, b: int) -> int:", []any{2, 3}, nil)
	require.NoError(t, err)
	require.JSONEq(t, "5", string(fr.Value))
	require.Len(t, fr.Attempts, 2)
	require.Equal(t, OutcomeTestsFailed, fr.Attempts[0].Outcome)
	require.Equal(t, []string{"TestAdd.test_negative", "TestAdd.test_small"}, testNames(fr.Attempts[0].Tests))
	require.Equal(t, TestFailed, fr.Attempts[0].Tests[0].Outcome)
	require.Contains(t, fr.Attempts[0].Tests[0].Message, "AssertionError: 5 != -5")
	require.Equal(t, TestPassed, fr.Attempts[0].Tests[1].Outcome)

	retry := lastMessage(t, srv, 1)
	require.Contains(t, retry, "1 of 2 tests failed")
	require.Contains(t, retry, "TestAdd.test_negative (generated, failed)")
	require.Contains(t, retry, "5 != -5")

	require.Equal(t, addTests+"\n", fr.TestCode)
	require.Len(t, fr.Tests, 2)
	for _, tr := range fr.Tests {
		require.Equal(t, TestPassed, tr.Outcome, tr.Name)
		require.Equal(t, "generated", tr.Source)
	}
	require.Equal(t, 2, fr.Quality.TestsPassed)
	require.Zero(t, fr.Quality.TestsFailed)
	system := srv.Requests()[0].Chat.Messages[0].Content
	require.Contains(t, system, "second ```python block")
	require.Contains(t, system, "# Arrange", "the scaffold is in the prompt")
}

func testNames(tests []TestResult) []string {
	var names []string
	for _, t := range tests {
		names = append(names, t.Name)
	}
	return names
}

// Doctest examples in the signature's docstring are tests, with or without
// Tests; a reply without the tests Tests asks for is a failed attempt.
func TestFunctionDoctests(t *testing.T) {
	sig := "def square(x: int) -> int:\n    \"\"\"Squares x.\n\n    >>> square(3)\n    9\n    >>> square(-2)\n    4\n    \"\"\""
	srv := llmtest.New(t,
		py("def square(x):\n    return x * abs(x)"),
		py("def square(x):\n    return x * x"))
	fr, err := newGen(t, srv, Options{}).Function(context.Background(), sig, []any{5}, nil)
	require.NoError(t, err)
	require.JSONEq(t, "25", string(fr.Value))
	require.Equal(t, OutcomeTestsFailed, fr.Attempts[0].Outcome)
	require.Equal(t, []string{"doctest 1: square(3)", "doctest 2: square(-2)"}, testNames(fr.Attempts[0].Tests))
	require.Equal(t, TestPassed, fr.Attempts[0].Tests[0].Outcome)
	require.Equal(t, TestFailed, fr.Attempts[0].Tests[1].Outcome)
	require.Contains(t, fr.Attempts[0].Tests[1].Message, "Expected:\n    4\nGot:\n    -4")
	require.Contains(t, lastMessage(t, srv, 1), "doctest 2: square(-2) (doctest, failed)")
	require.Equal(t, "tests_failed: 1 of 2 failed: doctest 2: square(-2)", fr.Attempts[0].Summary())
	require.Equal(t, 2, fr.Quality.TestsPassed)
	require.Contains(t, fr.Code, ">>> square(-2)", "the examples stay in the docstring")

	t.Run("no tests in the reply", func(t *testing.T) {
		srv := llmtest.New(t, py("def square(x):\n    return x * x"), pyWithTests("def square(x):\n    return x * x",
			"import unittest\n\nclass TestSquare(unittest.TestCase):\n    def test_zero(self):\n        self.assertEqual(square(0), 0)"))
		fr, err := newGen(t, srv, Options{Tests: true}).Function(context.Background(), sig, []any{5}, nil)
		require.NoError(t, err)
		require.Equal(t, OutcomeNoTests, fr.Attempts[0].Outcome)
		require.Len(t, fr.Tests, 3, "two doctests and the model's")
	})
}

// Tests that cannot load, and tests that break the sandbox's rules, fail
// the attempt with what went wrong.
func TestFunctionBadTests(t *testing.T) {
	srv := llmtest.New(t,
		pyWithTests("def add(a, b):\n    return a + b", "import unittest, os\n\nclass TestAdd(unittest.TestCase):\n    pass"),
		pyWithTests("def add(a, b):\n    return a + b", "import unittest\nraise RuntimeError('boom')\nclass TestAdd(unittest.TestCase):\n    pass"),
		pyWithTests("def add(a, b):\n    return a + b", addTests))
	fr, err := newGen(t, srv, Options{Tests: true}).Function(context.Background(), "def add(a, b):", []any{1, 1}, nil)
	require.NoError(t, err)
	require.Equal(t, OutcomeInvalid, fr.Attempts[0].Outcome)
	require.Contains(t, lastMessage(t, srv, 1), "The tests did not pass the sandbox's checks")
	require.Contains(t, lastMessage(t, srv, 1), "import of 'os' is not allowed")
	require.Equal(t, OutcomeTestsFailed, fr.Attempts[1].Outcome)
	require.Contains(t, lastMessage(t, srv, 2), "loading the tests failed")
	require.Contains(t, lastMessage(t, srv, 2), "RuntimeError: boom")
}

// MinQuality turns grades into failures, fed back like any other.
func TestFunctionMinQuality(t *testing.T) {
	branchy := "def sign(x):\n    if x > 0:\n        return 1\n    elif x < 0:\n        return -1\n    else:\n        return 0"
	srv := llmtest.New(t, py(branchy), py("def sign(x: int) -> int:\n    return (x > 0) - (x < 0)"))
	bar := QualityBar{MaxComplexity: 2, TypeHints: true, Docstring: true}
	fr, err := newGen(t, srv, Options{MinQuality: bar}).Function(context.Background(), "def sign(x: int) -> int:\n    \"\"\"The sign of x.\"\"\"", []any{-7}, nil)
	require.NoError(t, err)
	require.JSONEq(t, "-1", string(fr.Value))
	first := fr.Attempts[0]
	require.Equal(t, OutcomeLowQuality, first.Outcome)
	require.Equal(t, 3, first.Quality.Complexity)
	require.Equal(t, []string{"cyclomatic complexity 3 is above 2: simplify the branching"}, first.Quality.Problems)
	require.Contains(t, lastMessage(t, srv, 1), "misses the quality bar")
	require.Equal(t, "low_quality: cyclomatic complexity 3 is above 2: simplify the branching", first.Summary())
	require.Equal(t, 1, fr.Quality.Complexity)
	require.Empty(t, fr.Quality.Problems)

	t.Run("simple style has no type hints", func(t *testing.T) {
		srv := llmtest.New(t, py("def sign(x):\n    return (x > 0) - (x < 0)"))
		_, err := newGen(t, srv, Options{Style: "simple", Attempts: 1, MinQuality: QualityBar{TypeHints: true, MinTests: 1}}).
			Function(context.Background(), "def sign(x: int) -> int:", []any{1}, nil)
		require.ErrorIs(t, err, ErrGaveUp)
		require.ErrorContains(t, err, "low_quality")
	})
}

// Arguments that do not fit the signature are the caller's mistake: no
// LLM call, and the cached function stays.
func TestFunctionArgumentsChecked(t *testing.T) {
	srv := llmtest.New(t, py("def add(a, b):\n    return a + b"))
	dir := t.TempDir()
	g := newGen(t, srv, Options{CacheDir: dir})
	_, err := g.Function(context.Background(), "def add(a, b):", []any{1, 2}, nil)
	require.NoError(t, err)
	entries, _ := os.ReadDir(dir)
	require.Len(t, entries, 1)

	for _, tt := range []struct {
		args   []any
		kwargs map[string]any
		want   string
	}{
		{[]any{1}, nil, "missing a required argument: 'b'"},
		{[]any{1, 2}, map[string]any{"c": 3}, "got an unexpected keyword argument 'c'"},
		{[]any{1, 2, 3}, nil, "too many positional arguments"},
	} {
		fr, err := g.Function(context.Background(), "def add(a, b):", tt.args, tt.kwargs)
		require.Nil(t, fr)
		require.ErrorIs(t, err, ErrBadArguments)
		require.ErrorContains(t, err, "add(a, b): "+tt.want)
	}
	require.Len(t, srv.Requests(), 1, "no LLM call for a caller's mistake")
	entries, _ = os.ReadDir(dir)
	require.Len(t, entries, 1, "the cached function stays")
	fr, err := g.Function(context.Background(), "def add(a, b):", []any{1, 2}, nil)
	require.NoError(t, err)
	require.True(t, fr.Cached)
}

// The cache keys on the tests; cached code is tested again, and code whose
// tests now fail is regenerated.
func TestFunctionCacheTests(t *testing.T) {
	srv := llmtest.New(t, pyWithTests("def add(a, b):\n    return a + b", addTests))
	dir := t.TempDir()
	sig := "def add(a, b):"
	_, err := newGen(t, srv, Options{CacheDir: dir, Tests: true}).Function(context.Background(), sig, []any{1, 2}, nil)
	require.NoError(t, err)

	// Without Tests the prompt differs: another key.
	srv.Enqueue(py("def add(a, b):\n    return a + b"))
	fr, err := newGen(t, srv, Options{CacheDir: dir}).Function(context.Background(), sig, []any{1, 2}, nil)
	require.NoError(t, err)
	require.False(t, fr.Cached)
	require.Len(t, srv.Requests(), 2)

	// The cached tests run again: break them, and the code is regenerated.
	fr, err = newGen(t, srv, Options{CacheDir: dir, Tests: true}).Function(context.Background(), sig, []any{1, 2}, nil)
	require.NoError(t, err)
	require.True(t, fr.Cached)
	require.Len(t, fr.Tests, 2)
	paths, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	broken := 0
	for _, p := range paths {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		var e map[string]any
		require.NoError(t, json.Unmarshal(data, &e))
		if tests, _ := e["tests"].(string); tests != "" {
			e["tests"] = strings.Replace(tests, "-5)", "-6)", 1)
			data, _ = json.Marshal(e)
			require.NoError(t, os.WriteFile(p, data, 0o600))
			broken++
		}
	}
	require.Equal(t, 1, broken)
	srv.Enqueue(pyWithTests("def add(a, b):\n    return a + b", addTests))
	fr, err = newGen(t, srv, Options{CacheDir: dir, Tests: true}).Function(context.Background(), sig, []any{1, 2}, nil)
	require.NoError(t, err)
	require.False(t, fr.Cached)
	require.Equal(t, "cache", fr.Attempts[0].Source)
	require.Equal(t, OutcomeTestsFailed, fr.Attempts[0].Outcome)
	require.Len(t, srv.Requests(), 3)
}
