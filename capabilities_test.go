package wasmpy_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/hostfuncs"
	"github.com/wasmpy/wasmpy/internal/testing/llmtest"
	"github.com/wasmpy/wasmpy/llm"
	"github.com/wasmpy/wasmpy/workspace"
)

// newSandbox opens a sandbox of its own, for tests that need a special Config.
func newSandbox(t *testing.T, cfg wasmpy.Config) *wasmpy.Sandbox {
	t.Helper()
	if cfg.Interpreter == "" {
		cfg.Interpreter = os.Getenv("WASMPY_INTERPRETER")
	}
	sb, err := wasmpy.New(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { sb.Close(context.Background()) })
	return sb
}

func runIn(t *testing.T, sb *wasmpy.Sandbox, job wasmpy.Job) *wasmpy.Result {
	t.Helper()
	res, err := sb.Run(context.Background(), job)
	require.NoError(t, err)
	return res
}

// stableDir makes a workspace with a file, a subdirectory and a symlink out.
func stableDir(t *testing.T) string {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("alpha beta\nbeta gamma\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "data"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data", "blob.bin"), []byte{0, 1, 2, 255}, 0o644))
	outside := filepath.Join(t.TempDir(), "secret.txt")
	require.NoError(t, os.WriteFile(outside, []byte("host secret"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "escape.txt")))
	return dir
}

func treeHash(t *testing.T, dir string) string {
	h := sha256.New()
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		require.NoError(t, err)
		h.Write([]byte(p + fi.Mode().String()))
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			h.Write(b)
		}
		return nil
	}))
	return hex.EncodeToString(h.Sum(nil))
}

func TestWorkspace(t *testing.T) {
	dir := stableDir(t)
	before := treeHash(t, dir)
	files := []wasmpy.Capability{wasmpy.ReadFile, wasmpy.WriteFile, wasmpy.ListFiles, wasmpy.SearchFiles}
	res := run(t, wasmpy.Job{Workspace: dir, Grants: files, Code: `
print(read_file("notes.txt").split())
print(list(read_file("data/blob.bin", binary=True)))
print(search_files("gamma"))
write_file("notes.txt", "overlaid")
print(read_file("notes.txt"))
write_file("out/report.bin", b"\x00\xff")
print(sorted(list_files("**")))
from wasmpy import read_file as rf
print(rf("out/report.bin", binary=True))
`})
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, strings.Join([]string{
		"['alpha', 'beta', 'beta', 'gamma']",
		"[0, 1, 2, 255]",
		"[{'path': 'notes.txt', 'line': 2, 'text': 'beta gamma'}]",
		"overlaid",
		"['data/blob.bin', 'notes.txt', 'out/report.bin']", // escape.txt leads out: not listed
		"b'\\x00\\xff'",
	}, "\n")+"\n", res.Stdout)
	require.Equal(t, before, treeHash(t, dir), "the stable dir was modified")
	require.Len(t, res.Files, 2)
	require.Equal(t, "notes.txt", res.Files[0].Path)
	require.Equal(t, "out/report.bin", res.Files[1].Path)
	b, ok := res.File("out/report.bin")
	require.True(t, ok)
	require.Equal(t, []byte{0, 255}, b)
	var names []string
	for _, c := range res.HostCalls {
		require.True(t, c.OK, c)
		names = append(names, c.Name)
	}
	require.Equal(t, []string{"read_file", "read_file", "search_files", "write_file", "read_file", "write_file", "list_files", "read_file"}, names)

	// The next run starts from the stable dir again.
	res = run(t, wasmpy.Job{Workspace: dir, Grants: files, Code: `print(read_file("notes.txt").split()[0])`})
	require.Equal(t, "alpha\n", res.Stdout, res.Stderr)
}

func TestWorkspaceEscapes(t *testing.T) {
	dir := stableDir(t)
	sb := newSandbox(t, wasmpy.Config{Grants: wasmpy.Builtins(),
		Workspace: workspace.Config{MaxFileBytes: 1 << 20, MaxOverlayBytes: 3 << 20, MaxFiles: 5}})
	for _, tc := range []struct{ name, code, want string }{
		{"traversal", `read_file("../../etc/passwd")`, "PermissionError"},
		{"inner traversal", `read_file("data/../../x")`, "PermissionError"},
		{"absolute", `read_file("/etc/passwd")`, "PermissionError"},
		{"nul", `read_file("notes.txt\x00.py")`, "PermissionError"},
		{"symlink out", `read_file("escape.txt")`, "PermissionError"},
		{"missing", `read_file("nope.txt")`, "FileNotFoundError"},
		{"directory", `read_file("data")`, "IsADirectoryError"},
		{"not utf-8", `read_file("data/blob.bin")`, "UnicodeError"},
		{"write traversal", `write_file("../x", "y")`, "PermissionError"},
		{"oversize write", `write_file("big", b"x" * (2 << 20))`, "OSError"},
		{"quota", `[write_file("f%d" % i, b"x" * (900 << 10)) for i in range(5)]`, "OSError"},
		{"file count", `[write_file("n%d" % i, "x") for i in range(6)]`, "OSError"},
		{"bad type", `write_file("x", 42)`, "TypeError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runIn(t, sb, wasmpy.Job{Workspace: dir, Code: tc.code})
			require.NotNil(t, res.Error, res.Stdout)
			require.Equal(t, wasmpy.KindException, res.Error.Kind)
			require.Equal(t, tc.want, res.Error.Type, res.Error.Message)
		})
	}
	// Refusals are ordinary exceptions the guest can catch.
	res := runIn(t, sb, wasmpy.Job{Workspace: dir, Code: `
try:
    read_file("../secret")
except PermissionError as e:
    print("caught:", e)
`})
	require.Nil(t, res.Error, res.Stderr)
	require.Contains(t, res.Stdout, "caught:")
}

// A run past its deadline gets no further host call: the sleep below ends
// at the deadline, and the write that follows must not land.
func TestNoCapabilityAfterDeadline(t *testing.T) {
	res := run(t, wasmpy.Job{Workspace: stableDir(t), Grants: wasmpy.Builtins(), Limits: wasmpy.Limits{Timeout: 300 * time.Millisecond}, Code: `
import time
time.sleep(30)
write_file("late.txt", "too late")
print("still running")
`})
	require.NotNil(t, res.Error)
	require.Equal(t, wasmpy.KindTimeout, res.Error.Kind)
	require.Empty(t, res.Files)
	require.Empty(t, res.Stdout)
}

// A capability bounds its own work by the run's deadline, and the guest
// never runs again after a capability that returned past it.
func TestCapabilityStopsAtDeadline(t *testing.T) {
	// The search would take over a minute (more than 10 s per 1000 lines here),
	// so even a much faster machine meets the deadline inside it, and a
	// loaded one has seconds to write the file first.
	const limit = 5 * time.Second
	res := run(t, wasmpy.Job{Grants: wasmpy.Builtins(), Limits: wasmpy.Limits{Timeout: limit}, Code: `
with open("big.txt", "w") as f:
    f.write(("ab" * 600 + "\n") * 7000)
print(len(search_files("[ab]{1000}c", "big.txt")))
write_file("late.txt", "too late")
`})
	require.NotNil(t, res.Error)
	require.Equal(t, wasmpy.KindTimeout, res.Error.Kind)
	require.Less(t, res.DurationMS, float64((limit + 400*time.Millisecond).Milliseconds())) // typically <20 ms over; room for a loaded machine (the old search ran 6-10 s over)
	require.Empty(t, res.Stdout)
	require.Len(t, res.Files, 1, "nothing written after the deadline")
}

func TestSubmitResult(t *testing.T) {
	submit := []wasmpy.Capability{wasmpy.SubmitResult}
	res := run(t, wasmpy.Job{Grants: submit, Code: `submit_result({"answer": 42, "items": [1, "two", None]})`})
	require.Nil(t, res.Error, res.Stderr)
	require.JSONEq(t, `{"answer": 42, "items": [1, "two", null]}`, string(res.Output))

	for _, tc := range []struct{ name, code, want string }{
		{"twice", "submit_result(1)\nsubmit_result(2)", "already called"},
		{"not json", "submit_result({1, 2})", "not JSON-serializable"},
		{"nan", "submit_result(float('nan'))", "not JSON-serializable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, wasmpy.Job{Grants: submit, Code: tc.code})
			require.Equal(t, "wasmpy.ResultError", res.Error.Type)
			require.Contains(t, res.Error.Message, tc.want)
		})
	}

	schema := json.RawMessage(`{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}`)
	res = run(t, wasmpy.Job{Grants: submit, Code: `submit_result({"n": "seven"})`, ResultSchema: schema})
	require.Equal(t, "wasmpy.ResultError", res.Error.Type)
	require.Contains(t, res.Error.Message, "/n")
	require.JSONEq(t, "null", string(res.Output))
	res = run(t, wasmpy.Job{Grants: submit, Code: `submit_result({"n": 7})`, ResultSchema: schema})
	require.Nil(t, res.Error, res.Stderr)
	require.JSONEq(t, `{"n": 7}`, string(res.Output))
}

// An LLM that does not answer holds the run no longer than its deadline.
func TestAskLLMStopsAtDeadline(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Content: "late", Delay: time.Minute})
	sb := newSandbox(t, wasmpy.Config{LLM: llm.Config{BaseURL: srv.URL(), Model: "m"}})
	const limit = 500 * time.Millisecond
	res := runIn(t, sb, wasmpy.Job{Grants: []wasmpy.Capability{wasmpy.AskLLM}, Limits: wasmpy.Limits{Timeout: limit}, Code: `
try:
    ask_llm("hello")
except Exception as e:
    print("caught", e)
`})
	require.NotNil(t, res.Error)
	require.Equal(t, wasmpy.KindTimeout, res.Error.Kind)
	require.Less(t, res.DurationMS, float64((limit + 400*time.Millisecond).Milliseconds())) // room for a loaded machine
	require.Empty(t, res.Stdout, "the guest must not run on after the deadline")
}

func TestAskLLM(t *testing.T) {
	// A 400 is final (a 429 or 5xx would be retried: see hostfuncs).
	srv := llmtest.New(t, llmtest.Reply{Content: "Paris"}, llmtest.Reply{Status: 400})
	sb := newSandbox(t, wasmpy.Config{
		LLM:       llm.Config{BaseURL: srv.URL(), Model: "test-model", APIKey: "k"},
		LLMBudget: hostfuncs.LLMBudget{MaxCalls: 2},
		Grants:    []wasmpy.Capability{wasmpy.AskLLM},
	})
	res := runIn(t, sb, wasmpy.Job{Code: `
import wasmpy
print(ask_llm("Capital of France?", system="Answer in one word."))
try:
    ask_llm("again")
except wasmpy.LLMError as e:
    print("llm error:", "400" in str(e))
try:
    ask_llm("third")
except wasmpy.BudgetExceeded as e:
    print("budget:", e)
`})
	require.Nil(t, res.Error, res.Stderr)
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	require.Len(t, lines, 3)
	require.Equal(t, "Paris", lines[0])
	require.Equal(t, "llm error: True", lines[1])
	require.Contains(t, lines[2], "budget:")
	require.Equal(t, 2, res.LLM.Calls)
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	require.Equal(t, "test-model", reqs[0].Chat.Model)
	require.Equal(t, "Bearer k", reqs[0].Header.Get("Authorization"))

	// Without an LLM configured, the guest gets a clear error.
	res = run(t, wasmpy.Job{Grants: []wasmpy.Capability{wasmpy.AskLLM}, Code: `ask_llm("hi")`})
	require.Equal(t, "wasmpy.LLMError", res.Error.Type)
	require.Contains(t, res.Error.Message, "no LLM configured")
}

func TestImportPolicy(t *testing.T) {
	sb := newSandbox(t, wasmpy.Config{AllowImports: []string{"math", "json"}})
	res := runIn(t, sb, wasmpy.Job{Code: "import math, json\nprint(math.sqrt(16), json.dumps([1]))"})
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "4.0 [1]\n", res.Stdout)
	for _, code := range []string{"import re", "from collections import deque", "import os.path", "__import__('re')"} {
		res = runIn(t, sb, wasmpy.Job{Code: code})
		require.NotNil(t, res.Error, code)
		require.Equal(t, "ImportError", res.Error.Type, code)
		require.Contains(t, res.Error.Message, "not allowed", code)
	}
}

// embed(texts, model=None) reaches the /embeddings endpoint, within the
// budget ask_llm shares.
func TestEmbed(t *testing.T) {
	srv := llmtest.New(t)
	sb := newSandbox(t, wasmpy.Config{
		LLM:       llm.Config{BaseURL: srv.URL(), Model: "embed-model"},
		LLMBudget: hostfuncs.LLMBudget{MaxCalls: 2},
		Grants:    []wasmpy.Capability{wasmpy.Embed, wasmpy.SubmitResult},
	})
	res := runIn(t, sb, wasmpy.Job{Code: `
import wasmpy
vs = embed(["one two", "three"])
v = embed("four", model="other")
try:
    embed(["five"])
except wasmpy.BudgetExceeded as e:
    print("budget:", e)
try:
    embed([3])
except TypeError as e:
    print("type:", e)
submit_result({"vs": vs, "v": v})
`})
	require.Nil(t, res.Error, res.Stderr)
	var out struct {
		VS [][]float64 `json:"vs"`
		V  []float64   `json:"v"`
	}
	require.NoError(t, json.Unmarshal(res.Output, &out))
	require.Equal(t, [][]float64{llmtest.Embedding("one two"), llmtest.Embedding("three")}, out.VS)
	require.Equal(t, llmtest.Embedding("four"), out.V)
	require.Contains(t, res.Stdout, "budget: LLM call budget exhausted: 2 calls made")
	require.Contains(t, res.Stdout, "type: ")
	require.Equal(t, 2, res.LLM.Calls)
	require.Equal(t, 4, res.LLM.TotalTokens)
	require.Len(t, srv.Requests(), 2)
	require.Contains(t, string(srv.Requests()[1].Body), `"model":"other"`)

	// Not granted: the guest cannot call it.
	res = run(t, wasmpy.Job{Code: `embed(["x"])`})
	require.NotNil(t, res.Error)
	require.Contains(t, res.Error.Message, `capability "embed" is not granted`)
}
