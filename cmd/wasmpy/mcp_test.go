package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

func toolText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestMCPStdio drives a real `wasmpy mcp` subprocess with the Go SDK's
// client over stdio.
func TestMCPStdio(t *testing.T) {
	requireCapabilities(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(wasmpyBinary(t), "mcp", "--skills", testSkills, "--db", filepath.Join(t.TempDir(), "p.db"), "--timeout", "20s")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	defer cs.Close()

	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	require.Subset(t, names, []string{"run_python", "write_file", "read_file", "list_files", "echo", "needs_approval"})

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "open('f.txt','w').write('kept')\nsubmit_result(6*7)"}})
	require.NoError(t, err)
	require.False(t, res.IsError, toolText(res))
	require.Equal(t, 42.0, res.StructuredContent.(map[string]any)["output"])
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "f.txt"}})
	require.NoError(t, err)
	require.Equal(t, "kept", toolText(res))

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "import socket\nsocket.create_connection(('example.com', 80))"}})
	require.NoError(t, err)
	require.True(t, res.IsError, "no network: %s", toolText(res))
	require.Contains(t, toolText(res), "error kind: exception")

	// A session keeps Python state across turns (kept in the provenance store).
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "session_create", Arguments: map[string]any{}})
	require.NoError(t, err)
	id := res.StructuredContent.(map[string]any)["session_id"]
	for _, code := range []string{"import math\nr = 2", "print(round(math.pi * r * r, 2))"} {
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code, "session_id": id}})
		require.NoError(t, err)
		require.False(t, res.IsError, toolText(res))
	}
	require.Equal(t, "12.57\n", res.StructuredContent.(map[string]any)["stdout"])

	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": []int{1}}})
	require.ErrorContains(t, err, `argument "code": want a string, got array`)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}})
	require.NoError(t, err)
	require.False(t, res.IsError, toolText(res))
}

// TestMCPStdioMalformed writes raw lines to `wasmpy mcp`: each malformed one
// (a batch included) gets a JSON-RPC error, and the session answers what
// follows.
func TestMCPStdioMalformed(t *testing.T) {
	requireCapabilities(t)
	cmd := exec.Command(wasmpyBinary(t), "mcp", "--skills", testSkills, "--db", filepath.Join(t.TempDir(), "p.db"))
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<20)
	next := func() map[string]any {
		t.Helper()
		require.True(t, lines.Scan(), "no answer; stderr: %s", stderr.String())
		var m map[string]any
		require.NoError(t, json.Unmarshal(lines.Bytes(), &m), lines.Text())
		return m
	}
	send := func(s string) {
		_, err := io.WriteString(stdin, s+"\n")
		require.NoError(t, err)
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	require.Equal(t, 1.0, next()["id"])
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, tc := range []struct {
		line string
		id   any
		code float64
	}{
		{"this is not json", nil, -32700},
		{`{"jsonrpc":"2.0","id":2,"method":`, nil, -32700},
		{`{"id":3,"method":"tools/list"}`, 3.0, -32600},
		{`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope"}}`, 4.0, -32602},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"run_python","arguments":{"code":{}}}}`, 5.0, -32602},
		{`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":"run_python"}`, 6.0, -32602},
		{"\x00\xff\xfe", nil, -32700},
		// Protocol 2025-06-18 has no batches: the SDK used to end the session (exit 125).
		{`[{"jsonrpc":"2.0","id":8,"method":"tools/list"}]`, nil, -32600},
		{`[]`, nil, -32600},
	} {
		send(tc.line)
		m := next()
		require.Equal(t, tc.id, m["id"], tc.line)
		require.Equal(t, tc.code, m["error"].(map[string]any)["code"], "%s: %v", tc.line, m)
	}
	send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run_python","arguments":{"code":"print('alive')"}}}`)
	m := next()
	require.Equal(t, 7.0, m["id"])
	require.Equal(t, "alive\n", m["result"].(map[string]any)["structuredContent"].(map[string]any)["stdout"])
	stdin.Close()
	require.NoError(t, cmd.Wait(), "exits 0 at EOF; stderr: %s", stderr.String())
}

// closeAfter closes the subprocess's stdin right after the client has
// written its n-th tools/call.
type closeAfter struct {
	io.WriteCloser
	mu sync.Mutex
	n  int
}

func (c *closeAfter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.WriteCloser.Write(p)
	if bytes.Contains(p, []byte(`"method":"tools/call"`)) {
		if c.n--; c.n == 0 {
			c.WriteCloser.Close()
		}
	}
	return n, err
}

// TestMCPStdioEOF: a client that closes `wasmpy mcp`'s stdin right after
// its last request still gets an answer to each (the SDK used to drop the
// calls in flight at EOF), and the process then exits 0.
func TestMCPStdioEOF(t *testing.T) {
	requireCapabilities(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(wasmpyBinary(t), "mcp", "--skills", testSkills, "--db", filepath.Join(t.TempDir(), "p.db"), "--timeout", "60s")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	const calls = 5
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "eof-test", Version: "1"}, nil).Connect(ctx,
		&mcp.IOTransport{Reader: stdout, Writer: &closeAfter{WriteCloser: stdin, n: calls}}, nil)
	require.NoError(t, err)
	defer cs.Close()
	var wg sync.WaitGroup
	out := make([]string, calls)
	errs := make([]error, calls)
	for i := range calls {
		wg.Go(func() {
			// The first call outlasts the others: it is surely in flight at EOF.
			code := fmt.Sprintf("import time\ntime.sleep(%g)\nprint(%d)", map[bool]float64{true: 0.5}[i == 0], i)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": code}})
			if errs[i] = err; err == nil {
				out[i] = fmt.Sprint(res.StructuredContent.(map[string]any)["stdout"])
			}
		})
	}
	wg.Wait()
	for i := range calls {
		require.NoError(t, errs[i], "call %d; stderr: %s", i, stderr.String())
		require.Equal(t, fmt.Sprintf("%d\n", i), out[i])
	}
	require.NoError(t, cmd.Wait(), "exits 0 once all are answered; stderr: %s", stderr.String())
}

// TestServeMCP drives `wasmpy serve --mcp` over streamable HTTP, behind its
// tokens: run_python is there only with --enable-exec.
func TestServeMCP(t *testing.T) {
	requireCapabilities(t)
	t.Setenv("WASMPY_TOKENS", "tok")
	connect := func(url string) *mcp.ClientSession {
		hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer tok")
			return http.DefaultTransport.RoundTrip(r)
		})}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "serve-test", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: hc}, nil)
		require.NoError(t, err)
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	db := filepath.Join(t.TempDir(), "p.db")
	url, _, stop := serveCLI(t, "--skills", testSkills, "--db", db, "--mcp")
	cs := connect(url)
	tools, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	for _, tool := range tools.Tools {
		require.NotEqual(t, "run_python", tool.Name, "no --enable-exec, no raw code")
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "m"}})
	require.NoError(t, err)
	require.False(t, res.IsError, toolText(res))
	status, _ := httpDo(t, "POST", url+"/mcp", `{}`)
	require.Equal(t, http.StatusUnauthorized, status)
	cs.Close()
	require.Equal(t, 0, stop())

	url, _, _ = serveCLI(t, "--skills", testSkills, "--db", db, "--mcp", "--enable-exec")
	cs = connect(url)
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_python", Arguments: map[string]any{"code": "print(2**10)"}})
	require.NoError(t, err)
	require.Contains(t, toolText(res), "1024")
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
