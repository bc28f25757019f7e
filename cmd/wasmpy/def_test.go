package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/internal/testing/llmtest"
)

const addSig = "def add(a: int, b: int) -> int:\n    \"\"\"Return a + b.\"\"\""

func TestDef(t *testing.T) {
	srv := llmtest.New(t, pyReply("def add(a, b):\n    print('adding', a, b)\n    return a + b"))
	code, out, errOut := wasmpyCLI(t, "", append([]string{"def", "--args", "[2, 3]"}, append(codegenArgs(t, srv), addSig)...)...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "5\n", out, "stdout holds the JSON value only")
	require.Equal(t, "adding 2 3\n", errOut, "what the function prints goes to stderr")
	require.Contains(t, srv.Requests()[0].Chat.Messages[1].Content, addSig)

	// From a file, with keyword arguments, and flags after the signature.
	sigFile := writeScript(t, "add.py", addSig+"\n")
	srv.Enqueue(pyReply("def add(a, b):\n    return a + b"))
	code, out, errOut = wasmpyCLI(t, "", "def", sigFile, "--kwargs", `{"a": "x", "b": "y"}`, "--llm-base-url", srv.URL(), "--llm-model", "m", "--no-cache")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "\"xy\"\n", out)
	require.Contains(t, srv.Requests()[1].Chat.Messages[1].Content, addSig)
}

func TestDefJSONAndRetry(t *testing.T) {
	srv := llmtest.New(t,
		pyReply("def mean(xs):\n    return sum(xs) / len(xs[0])"),
		pyReply("def mean(xs):\n    return sum(xs) / len(xs)"))
	code, out, errOut := wasmpyCLI(t, "", append([]string{"def", "--json", "--args", "[[1, 2, 3, 6]]"},
		append(codegenArgs(t, srv), "def mean(xs: list) -> float:")...)...)
	require.Equal(t, 0, code, errOut)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Equal(t, "mean", got["function"])
	require.Equal(t, 3.0, got["value"])
	require.Equal(t, 3.0, got["output"])
	require.Equal(t, "def mean(xs: list) -> float:\n    \"\"\"Args:\n        xs (list):\n\n    Returns:\n        float: The result.\n    \"\"\"\n    return sum(xs) / len(xs)\n", got["code"])
	require.Equal(t, true, got["ok"])
	quality := got["quality"].(map[string]any)
	require.Equal(t, true, quality["type_hints"])
	require.Equal(t, 1.0, quality["complexity"])
	attempts := got["attempts"].([]any)
	require.Len(t, attempts, 2)
	require.Equal(t, "exception", attempts[0].(map[string]any)["outcome"])
	require.Contains(t, srv.Requests()[1].Chat.Messages[3].Content, "with args = [[1,2,3,6]] and kwargs = {}")
}

func TestDefDryRunAndShowCode(t *testing.T) {
	srv := llmtest.New(t, pyReply("def sq(x):\n    return x * x"))
	cache := t.TempDir()
	base := []string{"--llm-base-url", srv.URL(), "--llm-model", "m", "--code-cache", cache}
	code, out, errOut := wasmpyCLI(t, "", append([]string{"def", "--dry-run", "def sq(x: int) -> int:"}, base...)...)
	require.Equal(t, 0, code, errOut)
	const sq = "def sq(x: int) -> int:\n    \"\"\"Args:\n        x (int):\n\n    Returns:\n        int: The result.\n    \"\"\"\n    return x * x\n"
	require.Equal(t, sq, out)

	code, out, errOut = wasmpyCLI(t, "", append([]string{"def", "--show-code", "--args", "[7]", "def sq(x: int) -> int:"}, base...)...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "# --- code (attempt 1, from the cache) ---\n"+sq+"# --- value ---\n49\n", out)
	require.Len(t, srv.Requests(), 1)
}

func TestDefBadInput(t *testing.T) {
	srv := llmtest.New(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no signature", []string{"def"}, "want one SIGNATURE_OR_FILE, got 0"},
		{"not a file nor a def", []string{"def", "add two numbers"}, `"add two numbers" is neither a file nor a signature`},
		{"args not an array", []string{"def", "--args", `{"a": 1}`, "def f(a):"}, "--args"},
		{"args not JSON", []string{"def", "--args", "[1,", "def f(a):"}, "want a JSON array"},
		{"kwargs not an object", []string{"def", "--kwargs", "[1]", "def f(a):"}, "want a JSON object"},
		{"bad signature", append([]string{"def", "def f(:"}, codegenArgs(t, srv)...), "def: bad signature: line 1: invalid syntax"},
		{"not a function", append([]string{"def", "def = 3"}, codegenArgs(t, srv)...), "def: bad signature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := wasmpyCLI(t, "", tc.args...)
			require.Equal(t, exitUsage, code, errOut)
			require.Empty(t, out)
			require.Contains(t, errOut, tc.want)
		})
	}
	require.Empty(t, srv.Requests(), "bad input never reaches the LLM")
}
