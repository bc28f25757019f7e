package mcpserver_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/mcpserver"
	"github.com/wasmpy/wasmpy/skills"
	"github.com/wasmpy/wasmpy/skills/service"
)

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// httpServer serves the HTTP API with MCP at /mcp, behind a token, sharing
// one Admission.
func httpServer(t *testing.T) (*httptest.Server, *skills.Admission) {
	t.Helper()
	ex, reg := fixtures(t)
	adm, err := skills.NewAdmission(skills.AdmissionConfig{})
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
	require.Equal(t, []skills.ExecutionCount{{Skill: "", Outcome: "exception", Count: 1}, {Skill: "", Outcome: "ok", Count: 1}, {Skill: "echo", Outcome: "ok", Count: 1}}, st.Executions)
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
