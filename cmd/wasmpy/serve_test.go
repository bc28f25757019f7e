package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
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

// serveCLI starts `wasmpy serve` in-process on a free port, waits until its
// skills are loaded, and returns its base URL, its log, and a function that
// stops it and returns its status.
func serveCLI(t *testing.T, args ...string) (string, *lockedBuffer, func() int) {
	t.Helper()
	url, logs, stop := serveCLINow(t, args...)
	require.Eventually(t, func() bool { // /health answers 503 until the load is over
		code, _ := httpDo(t, "GET", url+"/health", "")
		return code == http.StatusOK
	}, time.Minute, 20*time.Millisecond)
	return url, logs, stop
}

// serveCLINow is serveCLI without waiting for the skills.
func serveCLINow(t *testing.T, args ...string) (string, *lockedBuffer, func() int) {
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
	url, logs, stop := serveCLI(t, "--db", filepath.Join(t.TempDir(), "p.db"), "--enable-exec", "--timeout", "2s", "--log-format", "json")
	// #25 (weak): a service started with no token stays open after the
	// first `token create`; it says so at start-up, loudly.
	require.Contains(t, logs.String(), `"level":"WARN","msg":"NO AUTHENTICATION: this service asks for no token`)
	require.Contains(t, logs.String(), "takes effect only once the service restarts")
	code, body := httpDo(t, "GET", url+"/skills", "")
	require.Equal(t, 200, code)
	require.Len(t, body["skills"], 3, "the built-in examples")
	code, body = httpDo(t, "POST", url+"/exec", `{"code": "submit_result(6 * 7)"}`)
	require.Equal(t, 200, code, "%v", body)
	require.EqualValues(t, 42, body["output"])
	require.EqualValues(t, 2000, body["provenance"].(map[string]any)["limits"].(map[string]any)["timeout_ms"])
	code, _ = httpDo(t, "POST", url+"/exec", `{"code": "1", "limits": {"timeout_ms": 5000}}`)
	require.Equal(t, 400, code, "--timeout caps /exec")
	require.Equal(t, 0, stop())
}

// Budgets are flags of serve: past one, 429 budget_exceeded; a service
// with tokens does not warn that it has none.
func TestServeBudgets(t *testing.T) {
	requireCapabilities(t)
	tokens := writeScript(t, "tokens", "t0ken\nother\n")
	url, logs, _ := serveCLI(t, "--db", filepath.Join(t.TempDir(), "p.db"), "--enable-exec", "--tokens-file", tokens,
		"--sessions-per-token", "1", "--session-memory", "none")
	require.NotContains(t, logs.String(), "NO AUTHENTICATION")
	code, body := httpDo(t, "POST", url+"/sessions", "", "Authorization", "Bearer t0ken")
	require.Equal(t, 201, code, "%v", body)
	code, body = httpDo(t, "POST", url+"/sessions", "", "Authorization", "Bearer t0ken")
	require.Equal(t, 429, code, "%v", body)
	require.Equal(t, "budget_exceeded", body["error"].(map[string]any)["code"])
	code, body = httpDo(t, "POST", url+"/sessions", "", "Authorization", "Bearer other")
	require.Equal(t, 201, code, "per token: %v", body)
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
		{[]string{"--session-memory", "lots"}, `--session-memory "lots": want a size such as 512MiB or 4GiB, or none for no bound`},
		{[]string{"--mcp-sessions", "0"}, `--mcp-sessions "0": want a whole number from 1, or none`},
		{[]string{"--mcp-workspaces-per-token", "-1B"}, "--mcp-workspaces-per-token"},
		{[]string{"--skills", filepath.Join(dir, "nope")}, "no such file"},
		{[]string{"extra"}, "unexpected argument"},
	} {
		code, _, errOut := wasmpyCLI(t, "", append([]string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "p.db")}, tc.args...)...)
		require.Equal(t, exitUsage, code, "%v: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.msg)
	}
}

// A skill that takes long to check, or is broken, delays neither /health
// nor the other skills (issue 11: a deep schema kept /health silent for a
// minute).
func TestServeAnswersWhileSkillsLoad(t *testing.T) {
	requireCapabilities(t)
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(testSkills)))
	slow := filepath.Join(dir, "slow")
	require.NoError(t, os.MkdirAll(slow, 0o755))
	os.WriteFile(filepath.Join(slow, "skill.yaml"), []byte("name: slow\nversion: 1.0.0\ndescription: parses for long\nhandler: handler.run\nsafety_flags: [none]\n"), 0o644)
	os.WriteFile(filepath.Join(slow, "schema.json"), []byte(`{"input": {"type": "object", "additionalProperties": false}, "output": {}}`), 0o644)
	os.WriteFile(filepath.Join(slow, "handler.py"), []byte("def run():\n    pass\n"+strings.Repeat("x = [1, 2, 3]\n", 70000)), 0o644)
	deep := filepath.Join(dir, "deep")
	require.NoError(t, os.CopyFS(deep, os.DirFS(slow)))
	os.WriteFile(filepath.Join(deep, "skill.yaml"), []byte("name: deep\nversion: 1.0.0\ndescription: a deep schema\nhandler: handler.run\nsafety_flags: [none]\n"), 0o644)
	os.WriteFile(filepath.Join(deep, "schema.json"), []byte(`{"input": {"type": "object", "additionalProperties": false}, "output": `+
		strings.Repeat(`{"items": `, 5000)+"{}"+strings.Repeat("}", 5000)+`}`), 0o644)

	start := time.Now()
	// Parsing the slow handler's 70,000 lines takes seconds in the sandbox
	// under wazero, well past the 1s check bound on any machine, while a
	// small handler's check takes milliseconds. (Under wasmtime, five
	// times faster, the parse can run into the checker's memory limit
	// first: the engine is not what is tested here.)
	url, logs, stop := serveCLINow(t, "--skills", dir, "--db", filepath.Join(t.TempDir(), "p.db"), "--skill-check-timeout", "1s", "--engine", "wazero")
	code, health := httpDo(t, "GET", url+"/health", "")
	require.Equal(t, 503, code, "a classic client waits for /health before it calls a skill: %v", health)
	require.Equal(t, "loading", health["status"])
	require.Less(t, time.Since(start), 5*time.Second, "/health answers at once")
	require.NotZero(t, health["loading_skills"], "%v", health)
	code, health = httpDo(t, "GET", url+"/health/live", "")
	require.Equal(t, 200, code, "liveness does not wait for the skills")
	require.Equal(t, "ok", health["status"])

	require.Eventually(t, func() bool {
		code, _ := httpDo(t, "POST", url+"/skills/echo/execute", `{"args": {"message": "early"}}`)
		return code == 200
	}, 5*time.Second, 20*time.Millisecond, "a good skill is served while the slow one is checked")
	code, body := httpDo(t, "POST", url+"/skills/slow/execute", `{}`)
	require.Equal(t, 503, code, "%v", body)
	require.Equal(t, "loading", body["error"].(map[string]any)["code"])

	require.Eventually(t, func() bool {
		code, health := httpDo(t, "GET", url+"/health", "")
		return code == 200 && health["status"] == "ok"
	}, time.Minute, 50*time.Millisecond)
	_, health = httpDo(t, "GET", url+"/health", "")
	require.Equal(t, 0.0, health["loading_skills"], "%v", health)
	code, body = httpDo(t, "POST", url+"/skills/slow/execute", `{}`)
	require.Equal(t, 404, code, "refused once its check ran out of time: %v", body)
	code, _ = httpDo(t, "POST", url+"/skills/deep/execute", `{}`)
	require.Equal(t, 404, code)
	require.Equal(t, 0, stop())
	require.Contains(t, logs.String(), "took longer than 1s (the limit per skill)")
	require.Contains(t, logs.String(), "output: nested deeper than 64 levels")
}

// Every serve flag has its WASMPY_ variable, and serve reads them.
func TestServeFlagsFromEnv(t *testing.T) {
	for _, f := range serveCommand().Flags {
		name := f.Names()[0]
		env := "WASMPY_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		require.Contains(t, f.(interface{ GetEnvVars() []string }).GetEnvVars(), env, "--%s", name)
	}
	for _, f := range execCommand().Flags {
		if f.Names()[0] == "timeout" {
			require.Empty(t, f.(interface{ GetEnvVars() []string }).GetEnvVars(), "exec's --timeout is not serve's")
		}
	}

	requireCapabilities(t)
	t.Setenv("WASMPY_ENABLE_EXEC", "true")
	t.Setenv("WASMPY_TIMEOUT", "3s")
	t.Setenv("WASMPY_DB", filepath.Join(t.TempDir(), "p.db"))
	url, _, _ := serveCLI(t)
	code, body := httpDo(t, "POST", url+"/exec", `{"code": "submit_result(1)"}`)
	require.Equal(t, 200, code, "%v", body)
	require.EqualValues(t, 3000, body["provenance"].(map[string]any)["limits"].(map[string]any)["timeout_ms"])
}

// A client of the classic spec runs against `wasmpy serve`: the skill in
// the body, the output as "result", the classic provenance names.
func TestServeClassicExecute(t *testing.T) {
	requireCapabilities(t)
	url, _, _ := serveCLI(t, "--db", filepath.Join(t.TempDir(), "p.db"))
	code, body := httpDo(t, "POST", url+"/skills/execute", `{"skill": "text_summarize", "args": {"text": "Cats purr. Dogs bark."}, "actor_id": "a", "actor_type": "agent"}`)
	require.Equal(t, 200, code, "%v", body)
	require.Contains(t, body["result"].(map[string]any)["summary"], "Cats")
	prov := body["provenance"].(map[string]any)
	require.Equal(t, "text_summarize", prov["skill_name"])
	require.Equal(t, true, prov["success"])
	code, body = httpDo(t, "GET", url+"/", "")
	require.Equal(t, 200, code)
	require.Equal(t, "wasmpy", body["name"])
	require.NotEmpty(t, body["version"])
}
