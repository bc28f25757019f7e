package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/assets"
	"github.com/wasmpy/wasmpy/mcpserver"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/skills"
)

var (
	once     sync.Once
	executor *runs.Executor
	registry *skills.Registry
	setupErr error
)

// fixtures are one executor and the test skills (echo, needs_approval...),
// shared by the tests of this package.
func fixtures(t testing.TB) (*runs.Executor, *skills.Registry) {
	t.Helper()
	once.Do(func() {
		ctx := context.Background()
		executor, setupErr = runs.NewExecutor(ctx, runs.ExecutorConfig{Sandbox: wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER")}})
		if setupErr != nil {
			return
		}
		registry, setupErr = skills.LoadDir(ctx, "../testdata/skills", skills.LoadOptions{Checker: executor.Checker()})
	})
	require.NoError(t, setupErr)
	if k := executor.Interpreter().Kind; k != assets.Core {
		t.Fatalf("MCP runs need the core interpreter build (make interpreter); the interpreter here is %q", k)
	}
	return executor, registry
}

func newServer(t testing.TB, mutate func(*mcpserver.Config)) *mcpserver.Server {
	t.Helper()
	ex, reg := fixtures(t)
	cfg := mcpserver.Config{Executor: ex, Registry: reg, ExecLimits: wasmpy.Limits{Timeout: 10 * time.Second, Memory: 128 << 20}}
	if mutate != nil {
		mutate(&cfg)
	}
	srv, err := mcpserver.New(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	return srv
}

// client is a Go SDK client session and the progress messages it received.
type client struct {
	*mcp.ClientSession
	mu       sync.Mutex
	progress []*mcp.ProgressNotificationParams
}

func (c *client) progressText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, p := range c.progress {
		b.WriteString(p.Message)
	}
	return b.String()
}

func newClient(t testing.TB) (*client, *mcp.ClientOptions) {
	c := &client{}
	return c, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		c.mu.Lock()
		c.progress = append(c.progress, req.Params)
		c.mu.Unlock()
	}}
}

// connect connects a Go SDK client to srv over the in-memory transport.
func connect(t testing.TB, srv *mcpserver.Server) *client {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	_, err := srv.Connect(ctx, st)
	require.NoError(t, err)
	c, opts := newClient(t)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-test", Version: "1"}, opts).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	c.ClientSession = cs
	return c
}

func call(t testing.TB, c *client, name string, args any, meta mcp.Meta) *mcp.CallToolResult {
	t.Helper()
	res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	require.NoError(t, err)
	return res
}

// structured decodes a result's structured content.
func structured[T any](t testing.TB, res *mcp.CallToolResult) T {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var v T
	require.NoError(t, json.Unmarshal(b, &v), string(b))
	return v
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// protocolError requires err to be a JSON-RPC error with code.
func protocolError(t testing.TB, err error, code int64, msg string) {
	t.Helper()
	require.Error(t, err)
	var je *jsonrpc.Error
	require.ErrorAs(t, err, &je)
	require.Equal(t, code, je.Code, je.Message)
	require.Contains(t, je.Message, msg)
}

func TestListTools(t *testing.T) {
	_, reg := fixtures(t)
	c := connect(t, newServer(t, nil))
	res, err := c.ListTools(context.Background(), nil)
	require.NoError(t, err)
	tools := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		tools[tool.Name] = tool
	}
	for _, name := range []string{"run_python", "write_file", "read_file", "list_files"} {
		require.Contains(t, tools, name)
		require.NotNil(t, tools[name].OutputSchema, name)
	}
	for _, sk := range reg.Skills() {
		tool := tools[sk.Name]
		require.NotNil(t, tool, sk.Name)
		in, err := json.Marshal(tool.InputSchema)
		require.NoError(t, err)
		require.JSONEq(t, string(sk.InputSchema), string(in), "%s: the tool's input schema is the skill's", sk.Name)
		require.Contains(t, tool.Description, sk.Description)
	}
	out, err := json.Marshal(tools["echo"].OutputSchema)
	require.NoError(t, err)
	echo, _ := reg.Get("echo")
	require.JSONEq(t, string(echo.OutputSchema), string(out))
	// The description tells a model what the sandbox has and lacks.
	desc := tools["run_python"].Description
	for _, want := range []string{"CPython 3.13", "no network", "json", "submit_result", "Limits per call: 10s"} {
		require.Contains(t, desc, want)
	}
}

func TestRunPython(t *testing.T) {
	c := connect(t, newServer(t, nil))
	res := call(t, c, "run_python", map[string]any{
		"code":  "import sys\nprint('hello', sys.argv[1])\nprint('warn', file=sys.stderr)\nimport os; os.makedirs('out')\nopen('out/report.txt', 'w').write(input())\nsubmit_result({'sum': sum(range(10))})",
		"args":  []string{"there"},
		"stdin": "report body\n",
	}, mcp.Meta{"progressToken": "tok"})
	require.False(t, res.IsError, text(res))
	out := structured[mcpserver.RunOutput](t, res)
	require.True(t, out.OK)
	require.Equal(t, "hello there\n", out.Stdout)
	require.Equal(t, "warn\n", out.Stderr)
	require.JSONEq(t, `{"sum": 45}`, string(out.Output))
	require.Nil(t, out.Error)
	require.Len(t, out.Files, 1)
	require.Equal(t, "out/report.txt", out.Files[0].Path)
	require.True(t, provenance.ValidID(out.ExecutionID))
	require.Contains(t, text(res), "stdout:\nhello there\n")
	require.Contains(t, text(res), `output: {"sum":45}`)

	// The output streamed as progress notifications, in order.
	require.Eventually(t, func() bool { return c.progressText() == "hello there\nwarn\n" }, 20*time.Second, 5*time.Millisecond)
	c.mu.Lock()
	last := 0.0
	for _, p := range c.progress {
		require.Equal(t, "tok", p.ProgressToken)
		require.Greater(t, p.Progress, last, "progress increases")
		last = p.Progress
	}
	require.Equal(t, "stderr", c.progress[len(c.progress)-1].Meta["stream"])
	c.mu.Unlock()

	// What the run wrote is in the workspace.
	res = call(t, c, "read_file", map[string]any{"path": "out/report.txt"}, nil)
	require.False(t, res.IsError, text(res))
	require.Equal(t, "report body", structured[mcpserver.ReadOutput](t, res).Content)
}

// TestProgressChunks: output streams a line at a time, long lines in
// bounded chunks that keep characters whole, and a last partial line at
// the end of the run, all before the result.
func TestProgressChunks(t *testing.T) {
	c := connect(t, newServer(t, nil))
	res := call(t, c, "run_python", map[string]any{"code": "import sys\nprint('a')\nsys.stdout.write('é' * 5000)\nsys.stdout.flush()\nprint()\nsys.stdout.write('tail')"},
		mcp.Meta{"progressToken": "p"})
	out := structured[mcpserver.RunOutput](t, res)
	require.Eventually(t, func() bool { return c.progressText() == out.Stdout }, 20*time.Second, 5*time.Millisecond)
	c.mu.Lock()
	defer c.mu.Unlock()
	require.Equal(t, "a\n", c.progress[0].Message)
	require.Equal(t, "tail", c.progress[len(c.progress)-1].Message)
	for _, p := range c.progress {
		require.LessOrEqual(t, len(p.Message), 4096)
		require.True(t, utf8.ValidString(p.Message))
	}
	require.Greater(t, len(c.progress), 4, "the long line came in chunks")
}

func TestRunPythonFailures(t *testing.T) {
	c := connect(t, newServer(t, nil))
	for _, tc := range []struct {
		code   string
		limits map[string]any
		kind   wasmpy.Kind
		text   string
	}{
		{code: "print('before')\n1/0", kind: wasmpy.KindException, text: "run failed (error kind: exception): ZeroDivisionError: division by zero"},
		{code: "def f(:\n", kind: wasmpy.KindSyntax, text: "error kind: syntax"},
		{code: "while True: pass", limits: map[string]any{"timeout_ms": 300}, kind: wasmpy.KindTimeout, text: "error kind: timeout"},
		{code: "x = bytearray(200 << 20)", kind: wasmpy.KindMemory, text: "error kind: memory"},
		{code: "while True: pass", limits: map[string]any{"fuel": 100000}, kind: wasmpy.KindFuel, text: "error kind: fuel"},
		{code: "import sys; sys.exit(3)", kind: wasmpy.KindExit, text: "error kind: exit"},
	} {
		args := map[string]any{"code": tc.code}
		if tc.limits != nil {
			args["limits"] = tc.limits
		}
		res := call(t, c, "run_python", args, nil)
		require.True(t, res.IsError, tc.code)
		out := structured[mcpserver.RunOutput](t, res)
		require.False(t, out.OK)
		require.NotNil(t, out.Error, tc.code)
		require.Equal(t, tc.kind, out.Error.Kind, tc.code)
		require.Contains(t, text(res), tc.text)
	}
}

func TestWorkspaceTools(t *testing.T) {
	srv := newServer(t, nil)
	c := connect(t, srv)
	res := call(t, c, "write_file", map[string]any{"path": "data/nums.csv", "content": "1\n2\n3\n"}, nil)
	require.False(t, res.IsError, text(res))
	require.Equal(t, "data/nums.csv", structured[mcpserver.FileInfo](t, res).Path)
	call(t, c, "write_file", map[string]any{"path": "blob.bin", "content": "AP8A", "encoding": "base64"}, nil)

	// A run reads them, from files given inline too, and its writes persist.
	res = call(t, c, "run_python", map[string]any{
		"code":  "import csv\nnums = [int(r[0]) for r in csv.reader(open('data/nums.csv'))]\nextra = open('extra.txt').read()\nopen('total.txt', 'w').write(f'{sum(nums)} {extra} {open(\"blob.bin\", \"rb\").read()!r}')",
		"files": map[string]string{"extra.txt": "x"},
	}, nil)
	require.False(t, res.IsError, text(res))
	res = call(t, c, "run_python", map[string]any{"code": "print(open('total.txt').read())"}, nil)
	require.Equal(t, "6 x b'\\x00\\xff\\x00'\n", structured[mcpserver.RunOutput](t, res).Stdout)

	res = call(t, c, "read_file", map[string]any{"path": "blob.bin"}, nil)
	require.Equal(t, mcpserver.ReadOutput{Path: "blob.bin", Size: 3, Encoding: "base64", Content: "AP8A"}, structured[mcpserver.ReadOutput](t, res))
	res = call(t, c, "list_files", map[string]any{}, nil)
	var paths []string
	for _, f := range structured[struct{ Files []mcpserver.FileInfo }](t, res).Files {
		paths = append(paths, f.Path)
	}
	require.Equal(t, []string{"blob.bin", "data/nums.csv", "extra.txt", "total.txt"}, paths)
	res = call(t, c, "list_files", map[string]any{"dir": "data"}, nil)
	require.Len(t, structured[struct{ Files []mcpserver.FileInfo }](t, res).Files, 1)

	// Bad paths and missing files are tool errors that say why.
	for path, msg := range map[string]string{"../etc/passwd": "not a file inside the workspace", "/etc/passwd": "not a file inside the workspace",
		"missing.txt": "no such file", "data": "is a directory"} {
		res = call(t, c, "read_file", map[string]any{"path": path}, nil)
		require.True(t, res.IsError, path)
		require.Contains(t, text(res), msg, path)
	}

	// Another session sees none of it.
	other := connect(t, srv)
	res = call(t, other, "list_files", nil, nil)
	require.Empty(t, structured[struct{ Files []mcpserver.FileInfo }](t, res).Files)
	res = call(t, other, "run_python", map[string]any{"code": "import os; print(sorted(os.listdir('.')))"}, nil)
	require.Equal(t, "[]\n", structured[mcpserver.RunOutput](t, res).Stdout)
}

// TestWorkspaceRemovals: what a run removes or renames away leaves the
// workspace, from plain runs and session turns alike, and a session keeps
// no copy of its own that would hide what the workspace holds now.
func TestWorkspaceRemovals(t *testing.T) {
	srv := newServer(t, nil)
	c := connect(t, srv)
	ls := func() []string {
		t.Helper()
		res := call(t, c, "list_files", map[string]any{}, nil)
		paths := []string{}
		for _, f := range structured[struct{ Files []mcpserver.FileInfo }](t, res).Files {
			paths = append(paths, f.Path)
		}
		return paths
	}
	run := func(code, session string) mcpserver.RunOutput {
		t.Helper()
		args := map[string]any{"code": code}
		if session != "" {
			args["session_id"] = session
		}
		res := call(t, c, "run_python", args, nil)
		require.False(t, res.IsError, text(res))
		return structured[mcpserver.RunOutput](t, res)
	}
	for p, content := range map[string]string{"a.txt": "A", "b.txt": "B", "d/e/f.txt": "F", "d/g.txt": "G"} {
		call(t, c, "write_file", map[string]any{"path": p, "content": content}, nil)
	}
	run("import os\nos.remove('a.txt')\nos.rename('b.txt', 'c.txt')\nos.rename('d', 'x')", "")
	require.Equal(t, []string{"c.txt", "x/e/f.txt", "x/g.txt"}, ls())
	res := call(t, c, "read_file", map[string]any{"path": "a.txt"}, nil)
	require.True(t, res.IsError)
	require.Contains(t, text(res), "no such file")
	require.Equal(t, "['c.txt', 'x']\n", run("import os; print(sorted(os.listdir('.')))", "").Stdout)

	res = call(t, c, "session_create", map[string]any{}, nil)
	id := structured[runs.SessionInfo](t, res).ID
	out := run("open('s.txt', 'w').write('one')\nimport os\nos.remove('c.txt')\nkept = 1", id)
	require.Equal(t, []mcpserver.FileInfo{{Path: "s.txt", Size: 3, SHA256: out.Files[0].SHA256}}, out.Files)
	require.Equal(t, []string{"s.txt", "x/e/f.txt", "x/g.txt"}, ls())
	// The workspace changes between turns: the next turn sees it as it is.
	call(t, c, "write_file", map[string]any{"path": "s.txt", "content": "two"}, nil)
	run("import shutil; shutil.rmtree('x')", "")
	out = run("import os\nprint(kept, open('s.txt').read(), sorted(os.listdir('.')))", id)
	require.Equal(t, "1 two ['s.txt']\n", out.Stdout)
	require.Empty(t, out.Files, "a turn that wrote nothing reports nothing written")
	run("import os; os.remove('s.txt')", id)
	require.Equal(t, []string{}, ls())
}

func TestWorkspaceLimits(t *testing.T) {
	c := connect(t, newServer(t, func(cfg *mcpserver.Config) {
		cfg.Workspace.MaxFileBytes, cfg.Workspace.MaxOverlayBytes, cfg.Workspace.MaxFiles = 10, 15, 2
	}))
	res := call(t, c, "write_file", map[string]any{"path": "a", "content": strings.Repeat("x", 11)}, nil)
	require.True(t, res.IsError)
	require.Contains(t, text(res), "more than the 10 a file may hold")
	require.False(t, call(t, c, "write_file", map[string]any{"path": "a", "content": "0123456789"}, nil).IsError)
	res = call(t, c, "write_file", map[string]any{"path": "b", "content": "0123456"}, nil)
	require.Contains(t, text(res), "more than its 15")
	require.False(t, call(t, c, "write_file", map[string]any{"path": "b", "content": "01"}, nil).IsError)
	res = call(t, c, "write_file", map[string]any{"path": "c", "content": "0"}, nil)
	require.Contains(t, text(res), "already holds 2 files")
	// A run's writes past the bounds are reported, not lost silently.
	res = call(t, c, "run_python", map[string]any{"code": "open('big', 'w').write('y' * 50)"}, nil)
	out := structured[mcpserver.RunOutput](t, res)
	require.Empty(t, out.Files)
	require.Contains(t, out.SaveError, "big")
}

func TestSkillTools(t *testing.T) {
	c := connect(t, newServer(t, nil))
	res := call(t, c, "echo", map[string]any{"message": "hi", "count": 2}, nil)
	require.False(t, res.IsError, text(res))
	require.JSONEq(t, `{"echo": {"message": "hi", "count": 2}, "keys": 2}`, string(must(json.Marshal(res.StructuredContent))))
	require.JSONEq(t, `{"echo": {"message": "hi", "count": 2}, "keys": 2}`, text(res))
	require.True(t, provenance.ValidID(res.Meta["execution_id"].(string)))

	// Arguments the skill's schema refuses are a protocol error with the violations.
	_, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": 5}})
	protocolError(t, err, jsonrpc.CodeInvalidParams, "at /message")

	// A skill that needs approval gets it from the client's _meta only.
	res = call(t, c, "needs_approval", map[string]any{"target": "x"}, nil)
	require.True(t, res.IsError)
	require.Contains(t, text(res), "approval_required")
	require.Contains(t, text(res), mcpserver.ApprovedMeta)
	res = call(t, c, "needs_approval", map[string]any{"target": "x"}, mcp.Meta{mcpserver.ApprovedMeta: true})
	require.False(t, res.IsError, text(res))

	// A handler that fails is a tool error naming the code and kind.
	res = call(t, c, "bad_output", map[string]any{}, nil)
	require.True(t, res.IsError)
	require.Contains(t, text(res), "skill bad_output failed (invalid_output")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestProtocolErrors: unknown tools and arguments of the wrong shape are
// protocol errors, and the session goes on.
func TestProtocolErrors(t *testing.T) {
	c := connect(t, newServer(t, nil))
	ctx := context.Background()
	_, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool"})
	protocolError(t, err, jsonrpc.CodeInvalidParams, `unknown tool "no_such_tool"`)
	for _, tc := range []struct {
		tool string
		args any
		msg  string
	}{
		{"run_python", map[string]any{"code": 42}, `argument "code": want a string, got number`},
		{"run_python", map[string]any{}, `"code" is empty`},
		{"run_python", map[string]any{"code": "1", "limits": map[string]any{"timeout_ms": "soon"}}, `"limits.timeout_ms": want an integer in range, got string`},
		{"run_python", map[string]any{"code": "1", "limits": map[string]any{"timeout_ms": 999999999}}, "limits.timeout_ms: want 1 to 10000: the server's timeout ceiling (or 0"},
		{"run_python", map[string]any{"code": "1", "bogus": true}, `unknown field "bogus"`},
		{"run_python", map[string]any{"code": "1", "files": map[string]any{"../x": "y"}}, "not a file inside the workspace"},
		{"run_python", []int{1, 2}, "want an object, got array"},
		{"write_file", map[string]any{"path": "a", "content": "!!", "encoding": "base64"}, "not base64"},
		{"write_file", map[string]any{"path": "a", "content": "x", "encoding": "latin-1"}, `want "utf-8" or "base64"`},
		{"read_file", map[string]any{"path": []string{"a"}}, `argument "path": want a string, got array`},
	} {
		_, err := c.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
		protocolError(t, err, jsonrpc.CodeInvalidParams, tc.msg)
	}
	res := call(t, c, "run_python", map[string]any{"code": "print('still here')"}, nil)
	require.Equal(t, "still here\n", structured[mcpserver.RunOutput](t, res).Stdout)
}

// TestSharedAdmission: MCP runs take the slots HTTP runs take; when they
// are all busy, the call is a tool error that says so.
func TestSharedAdmission(t *testing.T) {
	adm, err := runs.NewAdmission(runs.AdmissionConfig{MaxConcurrent: 1, MaxQueue: -1})
	require.NoError(t, err)
	c := connect(t, newServer(t, func(cfg *mcpserver.Config) { cfg.Admission = adm }))
	hold, release, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		adm.Run(context.Background(), 0, func(context.Context) (*runs.Execution, error) {
			close(hold)
			<-release
			return nil, context.Canceled
		})
	}()
	<-hold
	res := call(t, c, "run_python", map[string]any{"code": "print(1)"}, nil)
	require.True(t, res.IsError)
	require.Contains(t, text(res), "busy: 1 runs in progress")
	close(release)
	<-done
	res = call(t, c, "run_python", map[string]any{"code": "print(1)"}, nil)
	require.False(t, res.IsError, text(res))
	st := adm.Stats()
	require.Equal(t, int64(1), st.Rejected)
	require.Equal(t, []runs.ExecutionCount{{Skill: "", Outcome: "ok", Count: 1}}, st.Executions)
}

func TestSkillsOnly(t *testing.T) {
	c := connect(t, newServer(t, func(cfg *mcpserver.Config) { cfg.SkillsOnly = true }))
	res, err := c.ListTools(context.Background(), nil)
	require.NoError(t, err)
	for _, tool := range res.Tools {
		require.NotContains(t, []string{"run_python", "write_file", "read_file", "list_files"}, tool.Name)
	}
	_, err = c.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "1"}})
	protocolError(t, err, jsonrpc.CodeInvalidParams, "unknown tool")
}

// TestSessions: run_python with a session_id continues the session's
// Python state; a failed turn leaves it as it was; forks are independent;
// a session is its MCP session's alone, and ends with it.
func TestSessions(t *testing.T) {
	ex, _ := fixtures(t)
	srv := newServer(t, nil)
	c := connect(t, srv)
	open := ex.SessionStats().Open
	res := call(t, c, "session_create", map[string]any{}, nil)
	require.False(t, res.IsError, text(res))
	id := structured[runs.SessionInfo](t, res).ID
	require.NotEmpty(t, id)
	turn := func(c *client, id, code string) (*mcp.CallToolResult, mcpserver.RunOutput) {
		t.Helper()
		res := call(t, c, "run_python", map[string]any{"code": code, "session_id": id}, nil)
		return res, structured[mcpserver.RunOutput](t, res)
	}
	_, out := turn(c, id, "import json\nx = 41\ndef f(): return x + 1\nclass C: pass\nopen('notes.txt', 'w').write('kept')")
	require.True(t, out.OK)
	require.Equal(t, 1, out.Session.Turn)
	_, out = turn(c, id, "print(f(), json.dumps([1]), C.__name__, open('notes.txt').read())")
	require.Equal(t, "42 [1] C kept\n", out.Stdout)
	require.Equal(t, 2, out.Session.Turn)

	// A turn that raises keeps what it did first, as a notebook cell does;
	// one the sandbox stopped keeps nothing of itself.
	res, out = turn(c, id, "y = 1\n1/0")
	require.True(t, res.IsError)
	require.True(t, out.Session.Kept)
	res = call(t, c, "run_python", map[string]any{"code": "x = 0\nwhile True: pass", "session_id": id, "limits": map[string]any{"timeout_ms": 300}}, nil)
	require.True(t, res.IsError)
	out = structured[mcpserver.RunOutput](t, res)
	require.Equal(t, wasmpy.KindTimeout, out.Error.Kind)
	require.False(t, out.Session.Kept)
	_, out = turn(c, id, "print(x, y)")
	require.Equal(t, "41 1\n", out.Stdout)

	// A fork goes its own way.
	res = call(t, c, "session_fork", map[string]any{"session_id": id}, nil)
	require.False(t, res.IsError, text(res))
	fork := structured[runs.SessionInfo](t, res).ID
	require.NotEqual(t, id, fork)
	turn(c, fork, "x = 7")
	_, out = turn(c, id, "print(x)")
	require.Equal(t, "41\n", out.Stdout)
	_, out = turn(c, fork, "print(x)")
	require.Equal(t, "7\n", out.Stdout)

	// A plain run sees none of it; another MCP session cannot name it.
	res = call(t, c, "run_python", map[string]any{"code": "print(x)"}, nil)
	require.Equal(t, "NameError", structured[mcpserver.RunOutput](t, res).Error.Type)
	other := connect(t, srv)
	for tool, args := range map[string]map[string]any{"run_python": {"code": "print(x)", "session_id": id},
		"session_fork": {"session_id": id}, "session_close": {"session_id": id}} {
		res = call(t, other, tool, args, nil)
		require.True(t, res.IsError, tool)
		require.Contains(t, text(res), "unknown_session", tool)
	}

	res = call(t, c, "session_close", map[string]any{"session_id": fork}, nil)
	require.False(t, res.IsError, text(res))
	res, _ = turn(c, fork, "print(x)")
	require.Contains(t, text(res), "unknown_session")
	_, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "session_fork", Arguments: map[string]any{"session_id": 5}})
	protocolError(t, err, jsonrpc.CodeInvalidParams, `argument "session_id": want a string, got number`)

	// Its sessions end with the MCP session.
	require.Equal(t, open+1, ex.SessionStats().Open)
	c.Close()
	require.Eventually(t, func() bool { return ex.SessionStats().Open == open }, 20*time.Second, 10*time.Millisecond)
}

// run_python's description and the maxima of its limits are generated from
// the limits a call actually gets: the service's default tier's (testing:
// 20s) under the operator's ceilings (here 30s, which do not bind), and a
// value past one is refused naming where that bound comes from.
func TestRunPythonDescribesAppliedLimits(t *testing.T) {
	c := connect(t, newServer(t, func(cfg *mcpserver.Config) {
		cfg.ExecLimits = wasmpy.Limits{Timeout: 30 * time.Second, Memory: 512 << 20}
	}))
	ctx := context.Background()
	res, err := c.ListTools(ctx, nil)
	require.NoError(t, err)
	var run *mcp.Tool
	for _, tool := range res.Tools {
		if tool.Name == "run_python" {
			run = tool
		}
	}
	require.NotNil(t, run)
	require.Contains(t, run.Description, "Limits per call: 20s wall clock, 256 MiB of memory")
	require.NotContains(t, run.Description, "30s")
	in, err := json.Marshal(run.InputSchema)
	require.NoError(t, err)
	var schema struct {
		Properties struct {
			Limits struct {
				Properties map[string]struct {
					Maximum     *float64 `json:"maximum"`
					Description string   `json:"description"`
				} `json:"properties"`
			} `json:"limits"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(in, &schema))
	lim := schema.Properties.Limits.Properties
	require.NotNil(t, lim["timeout_ms"].Maximum)
	require.Equal(t, 20000.0, *lim["timeout_ms"].Maximum)
	require.Contains(t, lim["timeout_ms"].Description, "20000 (20s)")
	require.Equal(t, float64(256<<20), *lim["memory_bytes"].Maximum)

	_, err = c.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "1", "limits": map[string]any{"timeout_ms": 25000}}})
	protocolError(t, err, jsonrpc.CodeInvalidParams, "limits.timeout_ms: want 1 to 20000: tier testing's timeout (or 0 for the default), got 25000")
	r := call(t, c, "run_python", map[string]any{"code": "submit_result(1)", "limits": map[string]any{"timeout_ms": 20000}}, nil)
	require.False(t, r.IsError, text(r))
}

// run_python's output schema spells each property's type as one string (a
// nullable value is an anyOf of typed branches): the portability the MCP
// Inspector's --strict checks; and the run's value is "output", as in
// exec --json and the HTTP service.
func TestRunPythonOutputSchemaIsPortable(t *testing.T) {
	c := connect(t, newServer(t, nil))
	res, err := c.ListTools(context.Background(), nil)
	require.NoError(t, err)
	for _, tool := range res.Tools {
		if tool.Name != "run_python" {
			continue
		}
		out, err := json.Marshal(tool.OutputSchema)
		require.NoError(t, err)
		var walk func(path string, v any)
		walk = func(path string, v any) {
			switch v := v.(type) {
			case map[string]any:
				if typ, ok := v["type"]; ok {
					_, one := typ.(string)
					require.True(t, one, "%s: type %v is not one string", path, typ)
				} else if _, any := v["anyOf"]; !any && path != "" {
					require.Fail(t, "untyped", "%s has neither type nor anyOf", path)
				}
				if _, ok := v["enum"]; ok {
					require.Contains(t, v, "type", "%s: enum without a type", path)
				}
				for k, sub := range v {
					switch k {
					case "properties":
						for name, p := range sub.(map[string]any) {
							walk(path+"/"+name, p)
						}
					case "items":
						walk(path+"/items", sub)
					case "anyOf":
						for i, b := range sub.([]any) {
							walk(fmt.Sprintf("%s/anyOf/%d", path, i), b)
						}
					}
				}
			}
		}
		var schema any
		require.NoError(t, json.Unmarshal(out, &schema))
		walk("", schema)
		require.Contains(t, schema.(map[string]any)["properties"], "output")
		require.NotContains(t, schema.(map[string]any)["properties"], "result")
	}
	r := call(t, c, "run_python", map[string]any{"code": "submit_result([1, 2])"}, nil)
	require.Equal(t, []any{1.0, 2.0}, r.StructuredContent.(map[string]any)["output"])
}
