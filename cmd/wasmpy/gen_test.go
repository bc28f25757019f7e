package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/internal/testing/llmtest"
)

// pyReply is a model's reply holding code in a fence.
func pyReply(code string) llmtest.Reply {
	return llmtest.Reply{Content: "Sure.\n```python\n" + code + "\n```"}
}

const genGood = "import math\nsubmit_result({'pi': round(math.pi, 2)})"

// codegenArgs are the flags every gen/def test needs: the fake LLM, a
// private code cache, fast backoff.
func codegenArgs(t *testing.T, srv *llmtest.Server) []string {
	return []string{"--llm-base-url", srv.URL(), "--llm-model", "test-model", "--code-cache", t.TempDir(), "--llm-backoff", "1ms"}
}

func TestGenRetriesThenPrints(t *testing.T) {
	srv := llmtest.New(t, pyReply("import os\nsubmit_result(os.getcwd())"), pyReply(genGood))
	code, out, errOut := wasmpyCLI(t, "", append([]string{"gen"}, append(codegenArgs(t, srv), "submit", "pi")...)...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "{\"pi\":3.14}\n", out)
	require.Contains(t, errOut, "wasmpy: gen: attempt 1 (llm): invalid: line 1: import of 'os' is not allowed")
	require.Equal(t, "Task: submit pi", srv.Requests()[0].Chat.Messages[1].Content)
	require.Contains(t, srv.Requests()[1].Chat.Messages[3].Content, "import of 'os' is not allowed")
}

// Flags may follow the task, and --json prints exactly one object: exec
// --json's fields plus the code and the attempts.
func TestGenJSON(t *testing.T) {
	srv := llmtest.New(t, pyReply("print('working')\n"+genGood))
	code, out, errOut := wasmpyCLI(t, "", append([]string{"gen", "submit pi"}, append(codegenArgs(t, srv), "--json")...)...)
	require.Equal(t, 0, code, errOut)
	dec := json.NewDecoder(strings.NewReader(out))
	var got map[string]any
	require.NoError(t, dec.Decode(&got))
	require.False(t, dec.More(), "exactly one JSON object on stdout")
	for _, key := range []string{"exit_code", "stdout", "stderr", "output", "error", "duration_ms", "host_calls", "files", "llm"} {
		require.Contains(t, got, key, "exec --json's field %s", key)
	}
	require.Equal(t, "working\n", got["stdout"])
	require.Equal(t, map[string]any{"pi": 3.14}, got["output"])
	require.Equal(t, "print('working')\n"+genGood+"\n", got["code"])
	require.Equal(t, false, got["cached"])
	attempts := got["attempts"].([]any)
	require.Len(t, attempts, 1)
	require.Equal(t, "ok", attempts[0].(map[string]any)["outcome"])
}

func TestGenCacheHit(t *testing.T) {
	srv := llmtest.New(t, pyReply(genGood))
	args := append([]string{"gen"}, append(codegenArgs(t, srv), "submit pi")...)
	code, _, errOut := wasmpyCLI(t, "", args...)
	require.Equal(t, 0, code, errOut)
	code, out, errOut := wasmpyCLI(t, "", append(args, "--show-code")...)
	require.Equal(t, 0, code, errOut)
	require.Len(t, srv.Requests(), 1, "the second run asked the LLM nothing")
	require.Equal(t, "# --- code (attempt 1, from the cache) ---\n"+genGood+"\n# --- output ---\n# --- result ---\n{\"pi\":3.14}\n", out)

	// --no-cache asks anyway.
	srv.Enqueue(pyReply(genGood))
	code, _, errOut = wasmpyCLI(t, "", append(args, "--no-cache")...)
	require.Equal(t, 0, code, errOut)
	require.Len(t, srv.Requests(), 2)
}

// --dry-run prints the validated code and runs nothing: this code would fail.
func TestGenDryRun(t *testing.T) {
	srv := llmtest.New(t, pyReply("submit_result(1 / 0)"))
	code, out, errOut := wasmpyCLI(t, "", append([]string{"gen", "--dry-run"}, append(codegenArgs(t, srv), "divide by zero")...)...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "submit_result(1 / 0)\n", out)
	require.Empty(t, errOut)
}

func TestGenGivesUp(t *testing.T) {
	srv := llmtest.New(t, pyReply("submit_result(1 / 0)"), pyReply("import os"))
	code, out, errOut := wasmpyCLI(t, "", append([]string{"gen", "--attempts", "2"}, append(codegenArgs(t, srv), "divide")...)...)
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Contains(t, errOut, "wasmpy: gen: attempt 1 (llm): exception: ZeroDivisionError: division by zero\n")
	require.Contains(t, errOut, "wasmpy: gen: attempt 2 (llm): invalid: line 1: import of 'os' is not allowed")
	require.Contains(t, errOut, "wasmpy: gen: no attempt succeeded in 2 attempts; the last: invalid")

	// With --json the attempts are in the object, and the status says it.
	srv.Enqueue(pyReply("submit_result(1 / 0)"))
	code, out, _ = wasmpyCLI(t, "", append([]string{"gen", "--attempts", "1", "--json"}, append(codegenArgs(t, srv), "divide")...)...)
	require.Equal(t, 1, code)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Equal(t, "exception", got["error"].(map[string]any)["kind"])
	require.Equal(t, "exception", got["attempts"].([]any)[0].(map[string]any)["outcome"])
}

func TestGenBackoff(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Status: 429}, llmtest.Reply{Status: 500}, pyReply(genGood))
	code, out, errOut := wasmpyCLI(t, "", append([]string{"gen"}, append(codegenArgs(t, srv), "submit pi")...)...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "{\"pi\":3.14}\n", out)
	require.Len(t, srv.Requests(), 3)

	srv.Enqueue(llmtest.Reply{Status: 503}, llmtest.Reply{Status: 503})
	code, _, errOut = wasmpyCLI(t, "", append([]string{"gen", "--llm-retries", "1"}, append(codegenArgs(t, srv), "other task")...)...)
	require.Equal(t, exitWasmpy, code)
	require.Contains(t, errOut, "wasmpy: gen: asking the LLM (1 retries): wasmpy: llm: status 503")
}

func TestGenWorkspaceAndOptions(t *testing.T) {
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("b a b"), 0o644))
	srv := llmtest.New(t, pyReply("print(sorted(read_file('notes.txt').split()))\nwrite_file('out.txt', 'done')"))
	outDir := t.TempDir()
	// --workspace and --out are the user's grants of reading and writing,
	// under gen's default tier (sandbox) too.
	code, out, errOut := wasmpyCLI(t, "", append([]string{"gen", "--no-result", "--workspace", ws, "--out", outDir, "--allow-import", "math,re"},
		append(codegenArgs(t, srv), "sort the words")...)...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "['a', 'b', 'b']\n", out)
	data, err := os.ReadFile(filepath.Join(outDir, "out.txt"))
	require.NoError(t, err)
	require.Equal(t, "done", string(data))
	system := srv.Requests()[0].Chat.Messages[0].Content
	require.Contains(t, system, "Import only these modules: math, re.")
	require.NotContains(t, system, "must call submit_result")
	for _, fn := range []string{"read_file(path", "write_file(path", "list_files(pattern", "search_files(pattern", "submit_result(value)"} {
		require.Contains(t, system, fn, "granted, so named")
	}
	for _, fn := range []string{"ask_llm", "embed(", "LLMError"} {
		require.NotContains(t, system, fn, "not granted, so not named")
	}

	// The allowlist binds: json is not in it.
	srv.Enqueue(pyReply("import json\nprint(json.dumps(1))"))
	code, _, errOut = wasmpyCLI(t, "", append([]string{"gen", "--no-result", "--allow-import", "math", "--attempts", "1"},
		append(codegenArgs(t, srv), "print json")...)...)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "import of 'json' is not allowed; the allowed modules are: math")
}

// The prompt names exactly what the run is granted: under gen's default
// tier (sandbox), submit_result alone, so a model is not told of files it
// cannot read; the README's example, with --workspace, reads them.
func TestGenPromptNamesWhatIsGranted(t *testing.T) {
	srv := llmtest.New(t, pyReply(genGood))
	code, _, errOut := wasmpyCLI(t, "", append([]string{"gen"}, append(codegenArgs(t, srv), "submit pi")...)...)
	require.Equal(t, 0, code, errOut)
	system := srv.Requests()[0].Chat.Messages[0].Content
	require.Contains(t, system, "submit_result(value)")
	require.Contains(t, system, "there are no files to read or write")
	for _, fn := range []string{"read_file", "write_file", "list_files", "search_files", "ask_llm", "embed("} {
		require.NotContains(t, system, fn, "sandbox does not grant it")
	}

	// Under trusted, every built-in.
	srv.Enqueue(pyReply(genGood))
	code, _, errOut = wasmpyCLI(t, "", append([]string{"gen", "--tier", "trusted"}, append(codegenArgs(t, srv), "submit pi again")...)...)
	require.Equal(t, 0, code, errOut)
	system = srv.Requests()[1].Chat.Messages[0].Content
	for _, fn := range []string{"read_file(path", "write_file(path", "list_files(pattern", "search_files(pattern", "ask_llm(prompt", "embed(texts", "submit_result(value)", "LLMError"} {
		require.Contains(t, system, fn)
	}

	// The README's example, as written.
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "docs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "docs", "notes.txt"), []byte("alpha beta beta\n"), 0o644))
	t.Chdir(dir)
	srv.Enqueue(pyReply("from collections import Counter\nsubmit_result(Counter(read_file('notes.txt').split()).most_common(3))"))
	code, out, errOut := wasmpyCLI(t, "", append([]string{"gen", "--workspace", "docs", "count the words in notes.txt and submit the top 3"}, codegenArgs(t, srv)...)...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "[[\"beta\",2],[\"alpha\",1]]\n", out)
	require.Contains(t, srv.Requests()[2].Chat.Messages[0].Content, "read_file(path")
}

func TestGenTemplate(t *testing.T) {
	code, out, _ := wasmpyCLI(t, "", "gen", "--print-template")
	require.Equal(t, 0, code)
	require.Contains(t, out, `{{define "system" -}}`)

	tmpl := writeScript(t, "prompt.tmpl", `{{define "system"}}You are terse. Modules: {{join .AllowImports " "}}{{end}}`)
	srv := llmtest.New(t, pyReply(genGood))
	code, _, errOut := wasmpyCLI(t, "", append([]string{"gen", "--template", tmpl, "--allow-import", "math"}, append(codegenArgs(t, srv), "pi")...)...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "You are terse. Modules: math", srv.Requests()[0].Chat.Messages[0].Content)
	require.Equal(t, "Task: pi", srv.Requests()[0].Chat.Messages[1].Content, "the user template stays embedded")
}

func TestGenBadInput(t *testing.T) {
	t.Setenv("WASMPY_LLM_BASE_URL", "")
	t.Setenv("OPENAI_BASE_URL", "")
	srv := llmtest.New(t)
	badTmpl := writeScript(t, "bad.tmpl", "no defines here")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no task", []string{"gen", "--no-cache"}, exitUsage, "gen: no task"},
		{"no LLM", []string{"gen", "--no-cache", "do it"}, exitUsage, "gen: no LLM configured: set --llm-base-url"},
		{"zero attempts", append([]string{"gen", "--attempts", "0"}, append(codegenArgs(t, srv), "x")...), exitUsage, "--attempts must be at least 1"},
		{"bad backoff", []string{"gen", "--llm-backoff", "soon", "x"}, exitUsage, `--llm-backoff "soon"`},
		{"bad template", append([]string{"gen", "--template", badTmpl}, append(codegenArgs(t, srv), "x")...), exitUsage, "defines none of"},
		{"missing template", []string{"gen", "--template", "/nonexistent/t.tmpl", "x"}, exitUsage, "no such file"},
		{"bad allowlist", append([]string{"gen", "--allow-import", "os.path"}, append(codegenArgs(t, srv), "x")...), exitUsage, `"os.path" is not a module name`},
		{"unknown flag after the task", []string{"gen", "x", "--frobnicate"}, exitUsage, "flag provided but not defined: -frobnicate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := wasmpyCLI(t, "", tc.args...)
			require.Equal(t, tc.code, code, errOut)
			require.Empty(t, out)
			require.Contains(t, errOut, tc.want)
			require.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
		})
	}
	require.Empty(t, srv.Requests())
}

func TestGenTaskFromStdin(t *testing.T) {
	srv := llmtest.New(t, pyReply(genGood))
	code, out, errOut := wasmpyCLI(t, "submit pi\nto two places\n", append([]string{"gen", "-"}, codegenArgs(t, srv)...)...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "{\"pi\":3.14}\n", out)
	require.Equal(t, "Task: submit pi\nto two places", srv.Requests()[0].Chat.Messages[1].Content)
}

// def's prompt too names what the function's run is granted: no files by
// default, the workspace's functions with --workspace, which grants them.
func TestDefPromptNamesWhatIsGranted(t *testing.T) {
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "words.txt"), []byte("a b c"), 0o644))
	srv := llmtest.New(t, pyReply("def n() -> int:\n    return 3"),
		pyReply("def count(name: str) -> int:\n    return len(read_file(name).split())"))
	code, out, errOut := wasmpyCLI(t, "", append([]string{"def", "def n() -> int:"}, codegenArgs(t, srv)...)...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "3\n", out)
	system := srv.Requests()[0].Chat.Messages[0].Content
	require.Contains(t, system, "no files")
	require.NotContains(t, system, "read_file")

	code, out, errOut = wasmpyCLI(t, "", append([]string{"def", "--workspace", ws, "--args", `["words.txt"]`, "def count(name: str) -> int:"}, codegenArgs(t, srv)...)...)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "3\n", out)
	system = srv.Requests()[1].Chat.Messages[0].Content
	require.Contains(t, system, "read_file(path")
	require.NotContains(t, system, "write_file", "--out was not given")
}
