package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveCLI starts `wasmpy serve` in-process on a free port and returns its
// base URL, its log, and a function that stops it and returns its status.
func serveCLI(t *testing.T, args ...string) (string, *lockedBuffer, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &lockedBuffer{}
	status := make(chan int, 1)
	go func() {
		status <- run(ctx, append([]string{"wasmpy", "serve", "--addr", "127.0.0.1:0"}, args...), strings.NewReader(""), io.Discard, logs)
	}()
	var addr string
	require.Eventually(t, func() bool {
		select {
		case code := <-status:
			t.Fatalf("serve exited with %d: %s", code, logs.String())
		default:
		}
		sc := bufio.NewScanner(strings.NewReader(logs.String()))
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == "listening" {
				addr = line["addr"].(string)
				return true
			}
		}
		return false
	}, time.Minute, 10*time.Millisecond)
	stopped := false
	stop := func() int {
		if stopped {
			return 0
		}
		stopped = true
		cancel()
		return <-status
	}
	t.Cleanup(func() { stop() })
	return "http://" + addr, logs, stop
}

func httpDo(t *testing.T, method, url, body string, header ...string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if method == "POST" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var v map[string]any
	json.NewDecoder(resp.Body).Decode(&v)
	return resp.StatusCode, v
}

func TestServeCLI(t *testing.T) {
	requireCapabilities(t)
	db := filepath.Join(t.TempDir(), "p.db")
	tokens := writeScript(t, "tokens", "# who may call\nt0ken\n")
	url, logs, stop := serveCLI(t, "--skills", testSkills, "--db", db, "--tokens-file", tokens, "--max-concurrent", "2")

	code, health := httpDo(t, "GET", url+"/health", "")
	require.Equal(t, 200, code)
	require.EqualValues(t, 5, health["skills"])
	code, _ = httpDo(t, "GET", url+"/skills", "")
	require.Equal(t, 401, code)
	code, body := httpDo(t, "POST", url+"/skills/echo/execute", `{"args": {"message": "over http"}, "actor_id": "a1", "actor_type": "agent"}`,
		"Authorization", "Bearer t0ken")
	require.Equal(t, 200, code, "%v", body)
	id := body["provenance"].(map[string]any)["execution_id"].(string)
	code, body = httpDo(t, "GET", url+"/executions/"+id, "", "Authorization", "Bearer t0ken")
	require.Equal(t, 200, code)
	require.Equal(t, "a1", body["actor_id"])
	code, body = httpDo(t, "POST", url+"/exec", `{"code": "print(1)"}`, "Authorization", "Bearer t0ken")
	require.Equal(t, 404, code)
	require.Equal(t, "exec_disabled", body["error"].(map[string]any)["code"])

	require.Equal(t, 0, stop())
	require.Contains(t, logs.String(), `"execution_id":"`+id+`"`)
	require.Contains(t, logs.String(), `"msg":"shut down"`)

	// The run is in the database for the CLI to see.
	c, out, _ := wasmpyCLI(t, "", "history", "--db", db)
	require.Equal(t, 0, c)
	require.Contains(t, out, id)
}

func TestServeExecAndDefaults(t *testing.T) {
	requireCapabilities(t)
	url, _, stop := serveCLI(t, "--db", filepath.Join(t.TempDir(), "p.db"), "--enable-exec", "--timeout", "2s", "--log-format", "json")
	code, body := httpDo(t, "GET", url+"/skills", "")
	require.Equal(t, 200, code)
	require.Len(t, body["skills"], 2, "the built-in examples")
	code, body = httpDo(t, "POST", url+"/exec", `{"code": "submit_result(6 * 7)"}`)
	require.Equal(t, 200, code, "%v", body)
	require.EqualValues(t, 42, body["result"].(map[string]any)["result"])
	require.EqualValues(t, 2000, body["provenance"].(map[string]any)["limits"].(map[string]any)["timeout_ms"])
	code, _ = httpDo(t, "POST", url+"/exec", `{"code": "1", "limits": {"timeout_ms": 5000}}`)
	require.Equal(t, 400, code, "--timeout caps /exec")
	require.Equal(t, 0, stop())
}

func TestServeBadFlags(t *testing.T) {
	dir := t.TempDir()
	empty := writeScript(t, "empty", "# nothing\n")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--log-format", "xml"}, `--log-format "xml"`},
		{[]string{"--tokens-file", filepath.Join(dir, "nope")}, "--tokens-file"},
		{[]string{"--tokens-file", empty}, "no tokens"},
		{[]string{"--addr", "256.0.0.1:99999"}, "--addr"},
		{[]string{"--max-body", "lots"}, "--max-body"},
		{[]string{"--skills", filepath.Join(dir, "nope")}, "no such file"},
		{[]string{"extra"}, "unexpected argument"},
	} {
		code, _, errOut := wasmpyCLI(t, "", append([]string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "p.db")}, tc.args...)...)
		require.Equal(t, exitUsage, code, "%v: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.msg)
	}
}
