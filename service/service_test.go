package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/assets"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/stores"
	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/service"
	"github.com/wasmpy/wasmpy/skills"
)

var (
	once     sync.Once
	executor *runs.Executor
	registry *skills.Registry
	st       stores.Store
	setupErr error
)

// fixtures are one Executor and the registry of testdata/skills plus the
// examples and a skill with a short timeout, shared by the package's tests.
func fixtures(t testing.TB) (*runs.Executor, *skills.Registry, stores.Store) {
	t.Helper()
	once.Do(func() {
		ctx := context.Background()
		dir, err := os.MkdirTemp("", "wasmpy-skills-")
		if setupErr = err; err != nil {
			return
		}
		if st, setupErr = stores.Open(ctx, filepath.Join(dir, "provenance.db")); setupErr != nil {
			return
		}
		executor, setupErr = runs.NewExecutor(ctx, runs.ExecutorConfig{
			Sandbox: wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER")}, Store: st})
		if setupErr != nil {
			return
		}
		for _, src := range []string{"../testdata/skills", "../skills/examples"} {
			if setupErr = os.CopyFS(dir, os.DirFS(src)); setupErr != nil {
				return
			}
		}
		slow := filepath.Join(dir, "slow")
		os.MkdirAll(slow, 0o755)
		os.WriteFile(filepath.Join(slow, "skill.yaml"), []byte("name: slow\nversion: 1.0.0\ndescription: loops past its limit\nhandler: handler.run\nsafety_flags: [none]\nlimits: {timeout: 300ms}\n"), 0o644)
		os.WriteFile(filepath.Join(slow, "schema.json"), []byte(`{"input": {"type": "object", "additionalProperties": false}, "output": {}}`), 0o644)
		os.WriteFile(filepath.Join(slow, "handler.py"), []byte("def run():\n    while True:\n        pass\n"), 0o644)
		boom := filepath.Join(dir, "boom")
		os.MkdirAll(boom, 0o755)
		os.WriteFile(filepath.Join(boom, "skill.yaml"), []byte("name: boom\nversion: 1.0.0\ndescription: raises\nhandler: handler.run\nsafety_flags: [none]\n"), 0o644)
		os.WriteFile(filepath.Join(boom, "schema.json"), []byte(`{"input": {"type": "object", "additionalProperties": false}, "output": {}}`), 0o644)
		os.WriteFile(filepath.Join(boom, "handler.py"), []byte("def run():\n    raise ValueError('boom')\n"), 0o644)
		registry, setupErr = skills.LoadDir(ctx, dir, skills.LoadOptions{Checker: executor.Checker()})
		if setupErr == nil && len(registry.Problems()) > 0 {
			setupErr = fmt.Errorf("fixtures: %v", registry.Problems())
		}
	})
	require.NoError(t, setupErr)
	if k := executor.Interpreter().Kind; k != assets.Core {
		t.Fatalf("running skills needs the core interpreter build (make interpreter); the interpreter here is %q", k)
	}
	return executor, registry, st
}

type server struct {
	*httptest.Server
	store stores.Store
	logs  *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServer runs the service on loopback with a fresh store.
func startServer(t testing.TB, mutate func(*service.Config)) *server {
	t.Helper()
	ex, reg, st := fixtures(t)
	logs := &syncBuffer{}
	cfg := service.Config{Registry: reg, Executor: ex, Logger: slog.New(slog.NewJSONHandler(logs, nil)),
		ExecLimits: wasmpy.Limits{Timeout: 5 * time.Second, Memory: 64 << 20}}
	if mutate != nil {
		mutate(&cfg)
	}
	svc, err := service.New(cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(svc.Handler())
	t.Cleanup(srv.Close)
	return &server{Server: srv, store: st, logs: logs}
}

func admission(t testing.TB, concurrent, queue int, timeout time.Duration) *runs.Admission {
	a, err := runs.NewAdmission(runs.AdmissionConfig{MaxConcurrent: concurrent, MaxQueue: queue, RequestTimeout: timeout})
	require.NoError(t, err)
	return a
}

type reply struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (s *server) do(t testing.TB, method, path, body string, header ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	if method == "POST" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	r := reply{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		require.NoError(t, json.Unmarshal(raw, &r.body), string(raw))
	}
	return r
}

func (r reply) errorCode() string {
	e, _ := r.body["error"].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

func TestEndpoints(t *testing.T) {
	s := startServer(t, nil)

	r := s.do(t, "GET", "/health", "")
	require.Equal(t, 200, r.status)
	require.Equal(t, "ok", r.body["status"])
	require.EqualValues(t, 10, r.body["skills"])
	require.Equal(t, "core", r.body["interpreter"].(map[string]any)["kind"])

	r = s.do(t, "GET", "/skills", "")
	require.Equal(t, 200, r.status)
	var names []string
	for _, sk := range r.body["skills"].([]any) {
		names = append(names, sk.(map[string]any)["name"].(string))
	}
	require.Equal(t, []string{"bad_output", "boom", "compact_memory", "echo", "extract_entities", "needs_approval", "not_json", "slow", "spin", "text_summarize"}, names)

	r = s.do(t, "GET", "/skills/text_summarize", "")
	require.Equal(t, 200, r.status)
	require.Equal(t, "1.0.0", r.body["version"])
	require.Equal(t, []any{"none"}, r.body["safety_flags"])
	require.Len(t, r.body["code_hash"], 64)

	r = s.do(t, "GET", "/skills/text_summarize/schema", "")
	require.Equal(t, 200, r.status)
	require.Equal(t, "object", r.body["input"].(map[string]any)["type"])
	require.Contains(t, r.body["output"].(map[string]any)["required"], "compression_ratio")

	r = s.do(t, "POST", "/skills/echo/execute", `{"args": {"message": "hi"}, "actor_id": "agent-7", "actor_type": "agent"}`)
	require.Equal(t, 200, r.status, r.raw)
	require.Equal(t, map[string]any{"echo": map[string]any{"message": "hi", "count": 1.0}, "keys": 2.0}, r.body["output"])
	require.Nil(t, r.body["error"])
	require.Nil(t, r.body["run"].(map[string]any)["error"])
	require.NotContains(t, r.body["run"], "output", "the output is shown once, at the top")
	prov := r.body["provenance"].(map[string]any)
	id := prov["execution_id"].(string)
	require.Equal(t, id, r.header.Get("X-Execution-Id"))
	require.Equal(t, "agent-7", prov["actor_id"])
	require.Equal(t, "agent", prov["actor_type"])
	require.Equal(t, "ok", prov["outcome"])

	r2 := s.do(t, "GET", "/executions/"+id, "")
	require.Equal(t, 200, r2.status)
	require.Equal(t, prov, r2.body, "the stored record is the one returned")
	require.Contains(t, s.logs.String(), `"execution_id":"`+id+`"`, "the log line names the execution")

	r = s.do(t, "POST", "/skills/text_summarize/execute", `{"args": {"text": "Cats purr. Cats sleep a lot. Dogs bark. Cats and dogs play."}}`)
	require.Equal(t, 200, r.status, r.raw)
	require.Contains(t, r.body["output"].(map[string]any)["summary"], "Cats")

	r = s.do(t, "GET", "/metrics", "")
	require.Equal(t, 200, r.status)
	require.Contains(t, r.raw, `wasmpy_executions_total{skill="echo",outcome="ok"} 1`)
	require.Contains(t, r.raw, `wasmpy_http_requests_total{status="200"}`)
}

// Every error is JSON with a stable code and its status, never a stack.
func TestErrorStatuses(t *testing.T) {
	s := startServer(t, func(c *service.Config) { c.MaxBodyBytes = 4 << 10 })
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code                     string
		check                    func(t *testing.T, r reply)
	}{
		{"bad JSON", "POST", "/skills/echo/execute", `{"args": `, 400, "bad_request", nil},
		{"not an object", "POST", "/skills/echo/execute", `[1]`, 400, "bad_request", nil},
		{"unknown field", "POST", "/skills/echo/execute", `{"arguments": {}}`, 400, "bad_request", nil},
		{"trailing data", "POST", "/skills/echo/execute", `{} {}`, 400, "bad_request", nil},
		{"unknown skill", "POST", "/skills/nope/execute", `{}`, 404, "unknown_skill", nil},
		{"unknown skill info", "GET", "/skills/nope", ``, 404, "unknown_skill", nil},
		{"unknown skill schema", "GET", "/skills/nope/schema", ``, 404, "unknown_skill", nil},
		{"unknown execution", "GET", "/executions/" + provenance.NewID(), ``, 404, "unknown_execution", nil},
		{"bad execution id", "GET", "/executions/../../etc", ``, 404, "", nil},
		{"malformed execution id", "GET", "/executions/1234", ``, 404, "unknown_execution", nil},
		{"unknown route", "GET", "/nope", ``, 404, "not_found", nil},
		{"wrong method", "GET", "/skills/echo/execute", ``, 405, "method_not_allowed", func(t *testing.T, r reply) {
			require.Equal(t, "POST", r.header.Get("Allow"))
		}},
		{"wrong method on list", "DELETE", "/skills", ``, 405, "method_not_allowed", nil},
		{"body too large", "POST", "/skills/echo/execute", `{"args": {"message": "` + strings.Repeat("x", 8<<10) + `"}}`, 413, "body_too_large", nil},
		{"schema violation", "POST", "/skills/echo/execute", `{"args": {"message": "hi", "nested": {"n": "one"}}}`, 422, "invalid_input", func(t *testing.T, r reply) {
			e := r.body["error"].(map[string]any)
			require.Equal(t, "/nested/n", e["pointer"])
			require.Equal(t, "/nested/n", e["violations"].([]any)[0].(map[string]any)["pointer"])
		}},
		{"missing required", "POST", "/skills/echo/execute", `{"args": {}}`, 422, "invalid_input", func(t *testing.T, r reply) {
			require.Equal(t, "", r.body["error"].(map[string]any)["pointer"], "the root's pointer is empty, and present")
		}},
		{"approval missing", "POST", "/skills/needs_approval/execute", `{"args": {"target": "x"}}`, 403, "approval_required", func(t *testing.T, r reply) {
			require.Equal(t, `skill needs_approval needs an explicit approval: send "approved": true`, r.body["error"].(map[string]any)["message"])
		}},
		{"approval given", "POST", "/skills/needs_approval/execute", `{"args": {"target": "x"}, "approved": true}`, 200, "", func(t *testing.T, r reply) {
			require.Equal(t, true, r.body["provenance"].(map[string]any)["approved"])
		}},
		{"invalid output", "POST", "/skills/bad_output/execute", `{}`, 502, "invalid_output", func(t *testing.T, r reply) {
			require.Equal(t, "/count", r.body["error"].(map[string]any)["pointer"])
			require.Equal(t, "invalid_output", r.body["provenance"].(map[string]any)["outcome"])
		}},
		{"run failed", "POST", "/skills/boom/execute", `{}`, 502, "run_failed", func(t *testing.T, r reply) {
			e := r.body["error"].(map[string]any)
			require.Equal(t, "exception", e["kind"])
			require.Equal(t, "ValueError: boom", e["message"])
			require.Equal(t, "ValueError", r.body["provenance"].(map[string]any)["error"])
		}},
		{"skill timeout", "POST", "/skills/slow/execute", `{}`, 504, "timeout", func(t *testing.T, r reply) {
			require.Equal(t, "timeout", r.body["provenance"].(map[string]any)["outcome"])
		}},
		{"exec disabled", "POST", "/exec", `{"code": "print(1)"}`, 404, "exec_disabled", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do(t, tc.method, tc.path, tc.body)
			require.Equal(t, tc.status, r.status, r.raw)
			require.NotContains(t, r.raw, "goroutine")
			if tc.code != "" {
				require.Equal(t, "application/json", r.header.Get("Content-Type"))
				require.Equal(t, tc.code, r.errorCode(), r.raw)
				require.NotEmpty(t, r.body["error"].(map[string]any)["message"])
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

func TestExecEndpoint(t *testing.T) {
	s := startServer(t, func(c *service.Config) { c.EnableExec = true })
	r := s.do(t, "POST", "/exec", `{"code": "import sys\nprint('out')\nsubmit_result({'stdin': sys.stdin.read(), 'argv': sys.argv[1:]})", "stdin": "in", "args": ["a"], "actor_id": "me"}`)
	require.Equal(t, 200, r.status, r.raw)
	res := r.body["run"].(map[string]any)
	require.Equal(t, "out\n", res["stdout"])
	require.Equal(t, map[string]any{"stdin": "in", "argv": []any{"a"}}, r.body["output"])
	prov := r.body["provenance"].(map[string]any)
	require.Equal(t, "", prov["skill"])
	require.Equal(t, "me", prov["actor_id"])
	require.EqualValues(t, 5000, prov["limits"].(map[string]any)["timeout_ms"])

	r = s.do(t, "POST", "/exec", `{"code": "1/0"}`)
	require.Equal(t, 502, r.status)
	require.Equal(t, "run_failed", r.errorCode())
	require.Equal(t, "exception", r.body["error"].(map[string]any)["kind"])

	r = s.do(t, "POST", "/exec", `{"code": "while True: pass", "limits": {"timeout_ms": 200}}`)
	require.Equal(t, 504, r.status)
	r = s.do(t, "POST", "/exec", `{"code": "1", "limits": {"timeout_ms": 600000}}`)
	require.Equal(t, 400, r.status)
	r = s.do(t, "POST", "/exec", `{"code": "1", "limits": {"memory_bytes": 1073741824}}`)
	require.Equal(t, 400, r.status)
	r = s.do(t, "POST", "/exec", `{"code": ""}`)
	require.Equal(t, 400, r.status)
}

func TestAuth(t *testing.T) {
	s := startServer(t, func(c *service.Config) { c.Tokens = []string{"s3cret", "other"} })
	require.Equal(t, 200, s.do(t, "GET", "/health", "").status, "health needs no token")
	for _, h := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "s3cret"}, {"Authorization", "Basic czNjcmV0"}} {
		r := s.do(t, "GET", "/skills", "", h...)
		require.Equal(t, 401, r.status, h)
		require.Equal(t, "unauthorized", r.errorCode())
		require.Contains(t, r.header.Get("WWW-Authenticate"), "Bearer")
	}
	require.Equal(t, 200, s.do(t, "GET", "/skills", "", "Authorization", "Bearer s3cret").status)
	require.Equal(t, 200, s.do(t, "POST", "/skills/echo/execute", `{"args": {"message": "x"}}`, "Authorization", "Bearer other").status)
	require.Equal(t, 401, s.do(t, "GET", "/nope", "").status, "no route listing without a token")
}

// waitInFlight polls /health until n runs are in progress and q queued.
func waitInFlight(t *testing.T, s *server, n, q int) {
	t.Helper()
	require.Eventually(t, func() bool {
		r := s.do(t, "GET", "/health", "")
		return r.body["in_flight"] == float64(n) && r.body["queued"] == float64(q)
	}, 20*time.Second, 10*time.Millisecond)
}

func TestConcurrencyLimit(t *testing.T) {
	s := startServer(t, func(c *service.Config) { c.Admission = admission(t, 1, 1, 0) })
	statuses := make(chan int, 2)
	go func() { statuses <- s.do(t, "POST", "/skills/spin/execute", `{"args": {"seconds": 1}}`).status }()
	waitInFlight(t, s, 1, 0)
	go func() { statuses <- s.do(t, "POST", "/skills/echo/execute", `{"args": {"message": "queued"}}`).status }()
	waitInFlight(t, s, 1, 1)

	r := s.do(t, "POST", "/skills/echo/execute", `{"args": {"message": "third"}}`)
	require.Equal(t, 429, r.status)
	require.Equal(t, "busy", r.errorCode())
	require.Equal(t, "1", r.header.Get("Retry-After"))
	// Requests refused before running do not take a slot.
	require.Equal(t, 422, s.do(t, "POST", "/skills/echo/execute", `{"args": {}}`).status)

	require.Equal(t, 200, <-statuses)
	require.Equal(t, 200, <-statuses, "the queued request ran once the slot was free")
	require.Contains(t, s.do(t, "GET", "/metrics", "").raw, "wasmpy_executions_rejected_total 1")
}

func TestRequestTimeout(t *testing.T) {
	s := startServer(t, func(c *service.Config) {
		c.Admission = admission(t, 1, 4, 2*time.Second)
	})
	done := make(chan reply, 1)
	go func() { done <- s.do(t, "POST", "/skills/spin/execute", `{}`) }() // spins until the request's deadline
	waitInFlight(t, s, 1, 0)
	// Waits in the queue past its own, shorter, deadline.
	r := s.do(t, "POST", "/skills/echo/execute", `{"args": {"message": "x"}}`, service.RequestTimeoutHeader, "300")
	require.Equal(t, 504, r.status)
	require.Equal(t, "timeout", r.errorCode())
	for _, bad := range []string{"0", "-5", "soon", "1.5"} {
		r = s.do(t, "POST", "/skills/echo/execute", `{"args": {"message": "x"}}`, service.RequestTimeoutHeader, bad)
		require.Equal(t, 400, r.status, bad)
		require.Contains(t, r.raw, service.RequestTimeoutHeader)
	}
	r = <-done
	require.Equal(t, 504, r.status, r.raw)
	require.Equal(t, "timeout", r.errorCode())
	require.Equal(t, "timeout", r.body["provenance"].(map[string]any)["outcome"])
}

func TestGracefulShutdown(t *testing.T) {
	ex, reg, st := fixtures(t)
	svc, err := service.New(service.Config{Registry: reg, Executor: ex})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- svc.Serve(ctx, ln, 30*time.Second) }()
	s := &server{Server: &httptest.Server{URL: "http://" + ln.Addr().String(), Config: &http.Server{}}}

	done := make(chan reply, 1)
	go func() { done <- s.do(t, "POST", "/skills/spin/execute", `{"args": {"seconds": 1}}`) }()
	waitInFlight(t, s, 1, 0)
	stop()
	r := <-done
	require.Equal(t, 200, r.status, "the run in progress finished: %s", r.raw)
	require.NoError(t, <-served)
	_, err = http.Get(s.URL + "/health")
	require.Error(t, err, "no longer listening")
	rec, err := st.Get(context.Background(), r.header.Get("X-Execution-Id"))
	require.NoError(t, err)
	require.Equal(t, "ok", rec.Outcome)
}

func (s *server) Client() *http.Client {
	if s.Server.Listener == nil {
		return http.DefaultClient
	}
	return s.Server.Client()
}

// With Accept: text/event-stream, /exec streams the output as events and
// ends with the usual response as one last event.
func TestExecStream(t *testing.T) {
	s := startServer(t, func(c *service.Config) { c.EnableExec = true })
	events := func(raw string) (names []string, text map[string]string, last string) {
		text = map[string]string{}
		for _, ev := range strings.Split(strings.TrimSpace(raw), "\n\n") {
			name, data, ok := strings.Cut(strings.TrimPrefix(ev, "event: "), "\ndata: ")
			require.True(t, ok, raw)
			names = append(names, name)
			if name == "stdout" || name == "stderr" {
				var s string
				require.NoError(t, json.Unmarshal([]byte(data), &s))
				text[name] += s
			}
			last = data
		}
		return names, text, last
	}
	r := s.do(t, "POST", "/exec", `{"code": "import sys\nprint('one')\nprint('two', file=sys.stderr)\nsubmit_result(3)"}`,
		"Accept", "text/event-stream")
	require.Equal(t, 200, r.status, r.raw)
	require.Equal(t, "text/event-stream", r.header.Get("Content-Type"))
	names, text, last := events(r.raw)
	require.Equal(t, "stdout", names[0], "the output comes as it is written, in order")
	require.Equal(t, "result", names[len(names)-1])
	require.Equal(t, map[string]string{"stdout": "one\n", "stderr": "two\n"}, text)
	var final struct {
		Output json.RawMessage `json:"output"`
		Run    struct {
			Stdout string `json:"stdout"`
		} `json:"run"`
	}
	require.NoError(t, json.Unmarshal([]byte(last), &final))
	require.Equal(t, "one\n", final.Run.Stdout)
	require.Equal(t, "3", string(final.Output))

	r = s.do(t, "POST", "/exec", `{"code": "print('x')\n1/0"}`, "Accept", "text/event-stream")
	require.Equal(t, 200, r.status)
	names, text, last = events(r.raw)
	require.Equal(t, "error", names[len(names)-1])
	require.Equal(t, "x\n", text["stdout"])
	require.Contains(t, text["stderr"], "ZeroDivisionError")
	require.True(t, strings.HasPrefix(last, `{"body":{"error":{"code":"run_failed"`), last)
	require.Contains(t, last, `"status":502`)
}

// /health/ready is 200 while the store answers and no skill is loading,
// needs no token, and is 503 not_ready once the store stops answering.
func TestReadiness(t *testing.T) {
	st, err := stores.Open(context.Background(), filepath.Join(t.TempDir(), "p.db"))
	require.NoError(t, err)
	s := startServer(t, func(c *service.Config) { c.Store = st; c.Tokens = []string{"secret"} })
	r := s.do(t, "GET", "/health/ready", "")
	require.Equal(t, 200, r.status, r.raw)
	require.Equal(t, "ready", r.body["status"])

	require.NoError(t, st.Close())
	r = s.do(t, "GET", "/health/ready", "")
	require.Equal(t, 503, r.status, r.raw)
	require.Equal(t, "not_ready", r.errorCode())
	require.Contains(t, r.raw, "the store does not answer")
	require.NotContains(t, r.raw, "p.db", "the store's details go to the log, not the client")
	require.Equal(t, 200, s.do(t, "GET", "/health", "").status, "liveness does not depend on the store")
}

// Told to stop, Serve first drains: /health/ready fails while everything
// else still answers, until the drain delay ends (here: the listener is
// closed under it, which ends the wait).
func TestReadinessWhileDraining(t *testing.T) {
	ex, reg, _ := fixtures(t)
	svc, err := service.New(service.Config{Registry: reg, Executor: ex, DrainDelay: 10 * time.Minute})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- svc.Serve(ctx, ln, 30*time.Second) }()
	s := &server{Server: &httptest.Server{URL: "http://" + ln.Addr().String(), Config: &http.Server{}}}
	require.Equal(t, 200, s.do(t, "GET", "/health/ready", "").status)

	stop()
	deadline := time.Now().Add(time.Minute)
	for s.do(t, "GET", "/health/ready", "").status != 503 {
		require.True(t, time.Now().Before(deadline), "/health/ready never failed")
		time.Sleep(10 * time.Millisecond)
	}
	r := s.do(t, "GET", "/health/ready", "")
	require.Contains(t, r.raw, "draining")
	require.Equal(t, 200, s.do(t, "GET", "/health", "").status)
	require.Equal(t, 200, s.do(t, "GET", "/skills", "").status, "still serving while the balancer notices")
	ln.Close()
	require.Error(t, <-served)
}
