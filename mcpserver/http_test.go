package mcpserver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/mcpserver"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/stores"
	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/service"
	"github.com/wasmpy/wasmpy/skills"
)

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// httpServer serves the HTTP API with MCP at /mcp, behind a token, sharing
// one Admission.
func httpServer(t *testing.T) (*httptest.Server, *runs.Admission) {
	t.Helper()
	ex, reg := fixtures(t)
	adm, err := runs.NewAdmission(runs.AdmissionConfig{})
	require.NoError(t, err)
	srv := newServer(t, func(cfg *mcpserver.Config) { cfg.Admission = adm })
	svc, err := service.New(service.Config{Registry: reg, Executor: ex, Admission: adm, Tokens: []string{"s3cret"}, MCP: srv.Handler()})
	require.NoError(t, err)
	hs := httptest.NewServer(svc.Handler())
	t.Cleanup(hs.Close)
	return hs, adm
}

func TestStreamableHTTP(t *testing.T) {
	hs, adm := httpServer(t)
	ctx := context.Background()

	// Without the token: 401, as every other route.
	resp, err := http.Post(hs.URL+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, string(body), "unauthorized")

	c, opts := newClient(t)
	transport := &mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{"s3cret"}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-http-test", Version: "1"}, opts).Connect(ctx, transport, nil)
	require.NoError(t, err)
	defer cs.Close()
	c.ClientSession = cs

	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.NotEmpty(t, tools.Tools)

	// State in the workspace lasts across calls of the session; output streams.
	call(t, c, "write_file", map[string]any{"path": "n.txt", "content": "20"}, nil)
	res := call(t, c, "run_python", map[string]any{"code": "print(int(open('n.txt').read()) + 22)"}, mcp.Meta{"progressToken": 7})
	require.False(t, res.IsError, text(res))
	require.Equal(t, "42\n", structured[mcpserver.RunOutput](t, res).Stdout)
	require.Eventually(t, func() bool { return c.progressText() == "42\n" }, 20*time.Second, 5*time.Millisecond)

	res = call(t, c, "echo", map[string]any{"message": "over http"}, nil)
	require.False(t, res.IsError, text(res))
	res = call(t, c, "run_python", map[string]any{"code": "raise KeyError('k')"}, nil)
	require.True(t, res.IsError)
	require.Equal(t, "KeyError", structured[mcpserver.RunOutput](t, res).Error.Type)

	// The HTTP API's counters include the MCP runs.
	st := adm.Stats()
	require.Equal(t, []runs.ExecutionCount{{Skill: "", Outcome: "exception", Count: 1}, {Skill: "", Outcome: "ok", Count: 1}, {Skill: "echo", Outcome: "ok", Count: 1}}, st.Executions)
	req, _ := http.NewRequest("GET", hs.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(body), `wasmpy_executions_total{skill="echo",outcome="ok"} 1`)
}

// TestHTTPMalformed: within a session, a body that is not JSON-RPC gets
// 400, and a request of the wrong shape a JSON-RPC error; the session goes
// on.
func TestHTTPMalformed(t *testing.T) {
	hs, _ := httpServer(t)
	post := func(body, session string) (int, string, http.Header) {
		req, _ := http.NewRequest("POST", hs.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer s3cret")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	status, body, h := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, "")
	require.Equal(t, http.StatusOK, status, body)
	sid := h.Get("Mcp-Session-Id")
	require.NotEmpty(t, sid)
	status, body, _ = post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid)
	require.Equal(t, http.StatusAccepted, status, body)

	status, body, _ = post("garbage{", sid)
	require.Equal(t, http.StatusBadRequest, status, body)
	for req, want := range map[string]string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":5}`:                                                `"code":-32602`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope"}}`:                                  `unknown tool \"nope\"`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"run_python","arguments":{"code":false}}}`: `argument \"code\": want a string, got bool`,
	} {
		status, body, _ = post(req, sid)
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, want, req)
	}
	status, body, _ = post(`{"jsonrpc":"2.0","id":5,"method":"no/such/method"}`, sid)
	require.Equal(t, http.StatusBadRequest, status, body)
	require.Contains(t, body, `"no/such/method" unsupported`)
	status, body, _ = post(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"print(6*7)"}}}`, sid)
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, `"stdout":"42\n"`)
}

// tokenServer serves the HTTP API with MCP at /mcp over a store holding
// the tokens "alice" and "bob" (runners whose maximum tier is sandbox)
// beside the operator's static token "admin" (no maximum); its skills are
// probe (no tier: trusted; imports os) and big (tier testing, 200 MiB).
func tokenServer(t *testing.T, mutate func(*mcpserver.Config)) *httptest.Server {
	t.Helper()
	ctx := context.Background()
	st, err := stores.Open(ctx, filepath.Join(t.TempDir(), "p.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	for _, name := range []string{"alice", "bob"} {
		require.NoError(t, st.CreateToken(ctx, &provenance.Token{Name: name, Hash: provenance.HashBytes([]byte(name)), Role: provenance.RoleRunner, MaxTier: "sandbox"}))
	}
	ex, err := runs.NewExecutor(ctx, runs.ExecutorConfig{Sandbox: wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER")}, Store: st, Sessions: st})
	require.NoError(t, err)
	t.Cleanup(func() { ex.Close(ctx) })
	schema := []byte(`{"input": {"type": "object", "properties": {"mib": {"type": "integer"}}, "additionalProperties": false}, "output": {"type": "object"}}`)
	reg, err := skills.Load(ctx, fstest.MapFS{
		"probe/skill.yaml":  {Data: []byte("name: probe\nversion: 1.0.0\ndescription: imports os\nhandler: handler.run\nsafety_flags: [none]\n")},
		"probe/schema.json": {Data: schema},
		"probe/handler.py":  {Data: []byte("def run(mib=0):\n    import os\n    return {'sep': os.sep}\n")},
		"big/skill.yaml": {Data: []byte("name: big\nversion: 1.0.0\ndescription: needs memory\nhandler: handler.run\nsafety_flags: [none]\n" +
			"tier: testing\nlimits: {memory: 200MiB}\n")},
		"big/schema.json": {Data: schema},
		"big/handler.py":  {Data: []byte("def run(mib=0):\n    return {'mib': len(bytearray(mib << 20)) >> 20}\n")},
	}, skills.LoadOptions{Checker: ex.Checker()})
	require.NoError(t, err)
	require.Empty(t, reg.Problems())
	cfg := mcpserver.Config{Executor: ex, Registry: reg}
	if mutate != nil {
		mutate(&cfg)
	}
	srv, err := mcpserver.New(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	svc, err := service.New(service.Config{Registry: reg, Executor: ex, EnableExec: true, Tokens: []string{"admin"}, TokenStore: st, MCP: srv.Handler()})
	require.NoError(t, err)
	hs := httptest.NewServer(svc.Handler())
	t.Cleanup(hs.Close)
	return hs
}

// connectHTTP connects a Go SDK client to hs's /mcp with token.
func connectHTTP(t *testing.T, hs *httptest.Server, token string) (*client, error) {
	t.Helper()
	c, opts := newClient(t)
	transport := &mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-http-test", Version: "1"}, opts).Connect(context.Background(), transport, nil)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { cs.Close() })
	c.ClientSession = cs
	return c, nil
}

// #25 item 2: /mcp ignored the token's maximum tier: a token whose maximum
// is sandbox got run_python in the service's default tier (import os
// worked) and skills in their own. MCP over HTTP resolves the caller's
// tier from the token as POST /exec does. (#25 item 3 over MCP: a skill
// capped to sandbox gets sandbox's memory, not its own 200 MiB.)
func TestHTTPTokenMaxTier(t *testing.T) {
	hs := tokenServer(t, nil)
	alice, err := connectHTTP(t, hs, "alice")
	require.NoError(t, err)
	admin, err := connectHTTP(t, hs, "admin")
	require.NoError(t, err)

	res := call(t, alice, "run_python", map[string]any{"code": "import os\nprint(os.sep)"}, nil)
	require.True(t, res.IsError, text(res))
	require.Contains(t, text(res), "import of 'os' is not allowed")
	res = call(t, alice, "run_python", map[string]any{"code": "print(6*7)"}, nil)
	require.False(t, res.IsError, text(res))
	require.Greater(t, structured[mcpserver.RunOutput](t, res).FuelUsed, uint64(0), "sandbox is metered")
	_, err = alice.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python",
		Arguments: map[string]any{"code": "1", "limits": map[string]any{"memory_bytes": 128 << 20}}})
	protocolError(t, err, jsonrpc.CodeInvalidParams, "limits.memory_bytes: want 1 to 67108864")
	res = call(t, alice, "run_python", map[string]any{"code": "x = bytearray(100 << 20)"}, nil)
	require.True(t, res.IsError, text(res))
	require.Equal(t, wasmpy.KindMemory, structured[mcpserver.RunOutput](t, res).Error.Kind)
	res = call(t, admin, "run_python", map[string]any{"code": "import os\nx = bytearray(100 << 20)\nprint(os.sep)"}, nil)
	require.False(t, res.IsError, "a token with no maximum: testing, the default: %s", text(res))

	// Sessions: made in the caller's tier.
	res = call(t, alice, "session_create", map[string]any{}, nil)
	require.False(t, res.IsError, text(res))
	sid := structured[map[string]any](t, res)["session_id"].(string)
	res = call(t, alice, "run_python", map[string]any{"code": "import os", "session_id": sid}, nil)
	require.True(t, res.IsError)
	require.Contains(t, text(res), "import of 'os' is not allowed")

	// Skills: their own tier, capped to the caller's maximum, limits and all.
	res = call(t, alice, "probe", map[string]any{}, nil)
	require.True(t, res.IsError, text(res))
	require.Contains(t, text(res), "import of 'os' is not allowed")
	res = call(t, admin, "probe", map[string]any{}, nil)
	require.False(t, res.IsError, text(res))
	res = call(t, alice, "big", map[string]any{"mib": 120}, nil)
	require.True(t, res.IsError, text(res))
	require.Contains(t, text(res), "error kind: memory")
	res = call(t, admin, "big", map[string]any{"mib": 120}, nil)
	require.False(t, res.IsError, text(res))
}

// mcpPost posts one JSON-RPC message to /mcp with token, in MCP session
// sid ("" for none).
func mcpPost(t *testing.T, hs *httptest.Server, token, sid, body string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest("POST", hs.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// #25 item 4: MCP sessions over HTTP were not bound to the token that
// opened them: Bob's token with Alice's Mcp-Session-Id read her workspace
// file. Another token gets 404, as on the HTTP session routes.
func TestHTTPSessionBelongsToItsToken(t *testing.T) {
	hs := tokenServer(t, nil)
	alice, err := connectHTTP(t, hs, "alice")
	require.NoError(t, err)
	res := call(t, alice, "write_file", map[string]any{"path": "secret.txt", "content": "alice's"}, nil)
	require.False(t, res.IsError, text(res))
	sid := alice.ID()
	require.NotEmpty(t, sid)

	for _, body := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"secret.txt"}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/list"}`,
	} {
		status, got, _ := mcpPost(t, hs, "bob", sid, body)
		require.Equal(t, http.StatusNotFound, status, got)
		require.NotContains(t, got, "alice's")
		require.Contains(t, got, "unknown_session")
	}
	req, _ := http.NewRequest("DELETE", hs.URL+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer bob")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "Bob cannot end Alice's session")

	res = call(t, alice, "read_file", map[string]any{"path": "secret.txt"}, nil)
	require.False(t, res.IsError, text(res))
	require.Equal(t, "alice's", structured[mcpserver.ReadOutput](t, res).Content)
}

// #25 item 5: no ceiling on MCP sessions: one client opened 150, each
// allowed 64 MiB on disk for 30 idle minutes. Past the ceilings (per token
// and in all) initialize gets 429 budget_exceeded.
func TestHTTPSessionCeiling(t *testing.T) {
	hs := tokenServer(t, nil)
	perToken := mcpserver.DefaultBudgets().SessionsPerCaller
	var sids []string
	for range perToken {
		status, body, h := mcpPost(t, hs, "alice", "", initialize)
		require.Equal(t, http.StatusOK, status, body)
		sids = append(sids, h.Get("Mcp-Session-Id"))
	}
	status, body, _ := mcpPost(t, hs, "alice", "", initialize)
	require.Equal(t, http.StatusTooManyRequests, status, body)
	require.Contains(t, body, "budget_exceeded")
	require.Contains(t, body, fmt.Sprintf("this caller has %d MCP sessions open", perToken))
	status, body, _ = mcpPost(t, hs, "bob", "", initialize)
	require.Equal(t, http.StatusOK, status, "another token has its own: %s", body)

	// A session that ends makes room.
	req, _ := http.NewRequest("DELETE", hs.URL+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer alice")
	req.Header.Set("Mcp-Session-Id", sids[0])
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Less(t, resp.StatusCode, 300)
	require.Eventually(t, func() bool {
		status, _, _ := mcpPost(t, hs, "alice", "", initialize)
		return status == http.StatusOK
	}, 10*time.Second, 50*time.Millisecond)
}

// The ceiling in all, and the workspaces' byte budgets.
func TestHTTPBudgets(t *testing.T) {
	hs := tokenServer(t, func(c *mcpserver.Config) {
		c.Budgets = mcpserver.Budgets{Sessions: 3, WorkspacesPerCaller: 1 << 20, Workspaces: 3 << 19}
	})
	for _, who := range []string{"alice", "alice", "bob"} {
		status, body, _ := mcpPost(t, hs, who, "", initialize)
		require.Equal(t, http.StatusOK, status, body)
	}
	status, body, _ := mcpPost(t, hs, "admin", "", initialize)
	require.Equal(t, http.StatusTooManyRequests, status, body)
	require.Contains(t, body, "the service has 3 MCP sessions open")

	hs = tokenServer(t, func(c *mcpserver.Config) {
		c.Budgets = mcpserver.Budgets{WorkspacesPerCaller: 1 << 20, Workspaces: 1250 << 10}
	})
	a1, err := connectHTTP(t, hs, "alice")
	require.NoError(t, err)
	a2, err := connectHTTP(t, hs, "alice")
	require.NoError(t, err)
	b1, err := connectHTTP(t, hs, "bob")
	require.NoError(t, err)
	half := strings.Repeat("x", 600<<10)
	res := call(t, a1, "write_file", map[string]any{"path": "a", "content": half}, nil)
	require.False(t, res.IsError, text(res))
	res = call(t, a2, "write_file", map[string]any{"path": "a", "content": half}, nil)
	require.True(t, res.IsError, "Alice's two workspaces pass her 1 MiB")
	require.Contains(t, text(res), "budget_exceeded")
	require.Contains(t, text(res), "this caller's MCP workspaces hold 600KiB")
	res = call(t, a2, "run_python", map[string]any{"code": "open('b', 'w').write('y' * (600 << 10))"}, nil)
	require.Contains(t, structured[mcpserver.RunOutput](t, res).SaveError, "budget_exceeded", "a run's files count too")
	res = call(t, b1, "write_file", map[string]any{"path": "a", "content": half}, nil)
	require.False(t, res.IsError, text(res))
	res = call(t, b1, "write_file", map[string]any{"path": "b", "content": strings.Repeat("z", 100<<10)}, nil)
	require.True(t, res.IsError, "600 + 600 + 100 KiB pass the service's 1250")
	require.Contains(t, text(res), "the service's MCP workspaces hold")
	// Rewriting a file smaller frees what it held.
	res = call(t, a1, "write_file", map[string]any{"path": "a", "content": "small"}, nil)
	require.False(t, res.IsError, text(res))
	res = call(t, a2, "write_file", map[string]any{"path": "a", "content": half}, nil)
	require.False(t, res.IsError, text(res))
}
