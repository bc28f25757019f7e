package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/internal/testing/llmtest"
)

// A failed gen --json says so: ok false, and an error with its kind.
func TestGenJSONFailure(t *testing.T) {
	srv := llmtest.New(t, pyReply("import os\nsubmit_result(1)"))
	code, out, _ := wasmpyCLI(t, "", append([]string{"gen", "--attempts", "1", "--json"}, append(codegenArgs(t, srv), "x")...)...)
	require.Equal(t, 1, code)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Equal(t, false, got["ok"])
	e := got["error"].(map[string]any)
	require.Equal(t, "invalid", e["kind"])
	require.Contains(t, e["message"], "no attempt succeeded in 1 attempts")

	// The LLM refusing is kind llm, with no attempt.
	srv.Enqueue(llmtest.Reply{Status: 401, Error: "bad key"})
	code, out, _ = wasmpyCLI(t, "", append([]string{"gen", "--json"}, append(codegenArgs(t, srv), "x")...)...)
	require.Equal(t, exitWasmpy, code)
	got = nil
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Equal(t, false, got["ok"])
	require.Equal(t, "llm", got["error"].(map[string]any)["kind"])
	require.Contains(t, got["error"].(map[string]any)["message"], "bad key")
	require.Empty(t, got["attempts"])

	// A success is ok true, error null.
	srv.Enqueue(pyReply(genGood))
	code, out, _ = wasmpyCLI(t, "", append([]string{"gen", "--json"}, append(codegenArgs(t, srv), "x")...)...)
	require.Equal(t, 0, code)
	got = nil
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Equal(t, true, got["ok"])
	require.Nil(t, got["error"])
}

// --show-code prints the last code when every attempt failed.
func TestGenShowCodeOnFailure(t *testing.T) {
	srv := llmtest.New(t, pyReply("submit_result(1 / 0)"))
	code, out, errOut := wasmpyCLI(t, "", append([]string{"gen", "--attempts", "1", "--show-code"}, append(codegenArgs(t, srv), "x")...)...)
	require.Equal(t, 1, code)
	require.Equal(t, "# --- code (attempt 1, from the LLM) ---\nsubmit_result(1 / 0)\n", out)
	require.Contains(t, errOut, "ZeroDivisionError")
}

// gen needs a model: a flag, WASMPY_LLM_MODEL, or OPENAI_MODEL.
func TestGenModel(t *testing.T) {
	for _, k := range []string{"WASMPY_LLM_MODEL", "OPENAI_MODEL"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	srv := llmtest.New(t, pyReply(genGood))
	code, _, errOut := wasmpyCLI(t, "", "gen", "--llm-base-url", srv.URL(), "--code-cache", t.TempDir(), "x")
	require.Equal(t, exitUsage, code)
	require.Equal(t, "wasmpy: gen: no model: set --llm-model, WASMPY_LLM_MODEL or OPENAI_MODEL\n", errOut)
	require.Empty(t, srv.Requests())

	t.Setenv("OPENAI_MODEL", "env-model")
	code, _, errOut = wasmpyCLI(t, "", "gen", "--llm-base-url", srv.URL(), "--code-cache", t.TempDir(), "x")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "env-model", srv.Requests()[0].Chat.Model)
}

// A slow server is waited on no longer than --timeout, not 2 minutes.
func TestGenLLMTimeout(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Content: "late", Delay: 10 * time.Minute})
	start := time.Now()
	code, _, errOut := wasmpyCLI(t, "", append([]string{"gen", "--timeout", "1s", "--llm-retries", "0"}, append(codegenArgs(t, srv), "x")...)...)
	require.Equal(t, exitWasmpy, code)
	require.Contains(t, errOut, "LLM request timed out")
	require.Less(t, time.Since(start), 5*time.Minute, "bounded by --timeout, far below the reply's delay")

	code, _, errOut = wasmpyCLI(t, "", append([]string{"gen", "--timeout", "1s", "--llm-timeout", "5s"}, append(codegenArgs(t, srv), "x")...)...)
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "--llm-timeout 5s is longer than --timeout 1s")
	code, _, errOut = wasmpyCLI(t, "", append([]string{"gen", "--llm-timeout", "soon"}, append(codegenArgs(t, srv), "x")...)...)
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, `--llm-timeout "soon"`)
}

// --progress shows each step and each retry on stderr.
func TestGenProgress(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Status: 503}, pyReply(genGood))
	code, out, errOut := wasmpyCLI(t, "", append([]string{"gen", "--progress"}, append(codegenArgs(t, srv), "x")...)...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "{\"pi\":3.14}\n", out)
	require.Contains(t, errOut, "wasmpy: gen: attempt 1/3: asking the LLM…\n")
	require.Regexp(t, `wasmpy: gen: attempt 1/3: asking the LLM… retry 1/4 in \d+\.\ds: 503\n`, errOut)
	require.Contains(t, errOut, "wasmpy: gen: attempt 1/3: running it…\n")

	// Without --progress, and stderr not a terminal: silent.
	srv.Enqueue(pyReply(genGood))
	_, _, errOut = wasmpyCLI(t, "", append([]string{"gen", "--no-cache"}, append(codegenArgs(t, srv), "x")...)...)
	require.Empty(t, errOut)
}

// def checks --args and --kwargs against the signature first: a usage
// error, no LLM call, and the cached function stays.
func TestDefArgumentCheck(t *testing.T) {
	srv := llmtest.New(t, pyReply("def add(a, b):\n    return a + b"))
	args := codegenArgs(t, srv)
	code, out, errOut := wasmpyCLI(t, "", append([]string{"def", "--args", "[1, 2]", "def add(a, b):"}, args...)...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "3\n", out)

	code, _, errOut = wasmpyCLI(t, "", append([]string{"def", "--args", "[1]", "--kwargs", `{"b": 2, "c": 3}`, "def add(a, b):"}, args...)...)
	require.Equal(t, exitUsage, code)
	require.Equal(t, "wasmpy: def: the arguments do not fit the signature: add(a, b): got an unexpected keyword argument 'c'\n", errOut)
	require.Len(t, srv.Requests(), 1, "no LLM call")

	code, out, errOut = wasmpyCLI(t, "", append([]string{"def", "--show-code", "--args", "[5, 6]", "def add(a, b):"}, args...)...)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "from the cache", "the cached function stayed")
	require.Contains(t, out, "# --- value ---\n11\n")
}

// def --tests --json: the tests, each with its outcome, and the quality report.
func TestDefTestsJSON(t *testing.T) {
	tests := "import unittest\n\nclass TestAdd(unittest.TestCase):\n    def test_small(self):\n        self.assertEqual(add(2, 3), 5)\n"
	srv := llmtest.New(t, llmtest.Reply{Content: "```python\ndef add(a, b):\n    return a + b\n```\n```python\n" + tests + "```"})
	sig := "def add(a: int, b: int) -> int:\n    \"\"\"Adds.\n\n    >>> add(1, 1)\n    2\n    \"\"\""
	code, out, errOut := wasmpyCLI(t, "", append([]string{"def", "--tests", "--json", "--progress", "--args", "[2, 2]", "--min-quality", "complexity=3,tests=2,hints,docstring", sig}, codegenArgs(t, srv)...)...)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "wasmpy: def: attempt 1/3: running the tests…\n")
	var got struct {
		OK      bool `json:"ok"`
		Value   int  `json:"value"`
		Tests   []struct{ Name, Source, Outcome string }
		Quality struct {
			TestsPassed int  `json:"tests_passed"`
			Complexity  int  `json:"complexity"`
			TypeHints   bool `json:"type_hints"`
			Docstring   bool `json:"docstring"`
		}
		TestCode string `json:"test_code"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.True(t, got.OK)
	require.Equal(t, 4, got.Value)
	require.Len(t, got.Tests, 2)
	require.Equal(t, "doctest 1: add(1, 1)", got.Tests[0].Name)
	require.Equal(t, "TestAdd.test_small", got.Tests[1].Name)
	require.Equal(t, 2, got.Quality.TestsPassed)
	require.True(t, got.Quality.TypeHints && got.Quality.Docstring)
	require.Equal(t, tests, got.TestCode)

	for _, bad := range []string{"complexity", "lines=-1", "hints=1", "speed=3"} {
		code, _, errOut = wasmpyCLI(t, "", append([]string{"def", "--min-quality", bad, sig}, codegenArgs(t, srv)...)...)
		require.Equal(t, exitUsage, code, bad)
		require.Contains(t, errOut, "--min-quality", bad)
	}
}

// The guest's ask_llm retries a 503, catches LLMError without an import,
// and names the cause of a network error.
func TestAskLLMInGuest(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Status: 503}, llmtest.Reply{Content: "fine"})
	code, out, errOut := wasmpyCLI(t, "", "exec", "--llm-base-url", srv.URL(), "-c", "print(ask_llm('hi'))")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "fine\n", out)
	require.Len(t, srv.Requests(), 2)

	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	code, out, errOut = wasmpyCLI(t, "", "exec", "--llm-base-url", dead.URL+"/v1", "--timeout", "2s", "-c",
		"try:\n    ask_llm('hi')\nexcept LLMError as e:\n    print(type(e).__name__, e)\nassert BudgetExceeded.__name__ == 'BudgetExceeded'")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "LLMError LLM request failed (network error: connection refused)")
}
