package service_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/service"
)

// fuzzTargets are the endpoints FuzzRunRequest posts to: raw code and the
// skills whose handlers are correct and quick, so that every input the
// validation lets through must run to a 200.
var fuzzTargets = []string{"/exec", "/skills/echo/execute", "/skills/text_summarize/execute",
	"/skills/extract_entities/execute", "/skills/needs_approval/execute"}

// FuzzRunRequest posts arbitrary bodies to the run endpoints of the real
// handler, with the real interpreter behind it. Whatever the body, the answer
// is JSON with a stable code matching its status, never a 500, never a Go
// stack; a 5xx only ever reports a run that happened (the guest failed or
// timed out in /exec), and every run has its provenance record, finished,
// naming a printable actor.
//
//	go test ./service -run '^$' -fuzz FuzzRunRequest -fuzztime 5m
func FuzzRunRequest(f *testing.F) {
	for _, seed := range []struct {
		target uint8
		body   string
	}{
		{0, `{"code": "print(1)"}`},
		{0, `{"code": "import sys\nsubmit_result({'in': sys.stdin.read(), 'argv': sys.argv})", "stdin": "x", "args": ["a", "b"], "actor_id": "a", "actor_type": "agent"}`},
		{0, `{"code": "1/0", "limits": {"timeout_ms": 100, "memory_bytes": 33554432, "fuel": 1000000}}`},
		{0, `{"code": "x = [0] * 10**9", "limits": {"memory_bytes": 16777216}}`},
		{0, `{"code": "while True: pass", "limits": {"fuel": 10000}}`},
		{0, `{"code": "print(1)", "limits": {"timeout_ms": -1}}`},
		{0, `{"code": "print(1)", "limits": {"fuel": 1e30}}`},
		{0, `{"code": ""}`},
		{0, `{"code": 5}`},
		{1, `{"args": {"message": "hi", "count": 2, "nested": {"n": 1}}, "actor_id": "agent-7", "actor_type": "agent"}`},
		{1, `{"args": {"message": "hi", "nested": {"n": "one"}}}`},
		{1, `{"args": {"message": 1e400}}`},
		{1, `{"args": {"message": "\u00e9\u0000"}}`},
		{1, `{"args": [1]}`},
		{1, `{"args": {"message": "x"}, "approved": "yes"}`},
		{1, `{"args": `},
		{1, `{} {}`},
		{1, `null`},
		// What the security review of issue 11 broke: a 500, a 502.
		{0, `{"code": "print(1)", "limits": {"fuel": 18446744073709551615}}`},
		{1, `{"args": {"message": "a\ud800"}}`},
		{1, `{"args": {"message": "x"}, "actor_id": "evil\u001b]0;PWNED\u0007\nFAKE LINE"}`},
		{2, `{"args": {"text": "Cats purr. Cats sleep a lot. Dogs bark. Cats and dogs play.", "max_sentences": 1, "style": "bullet-points"}}`},
		{2, `{"args": {"text": "?", "max_sentences": 100}}`},
		{2, `{"args": {"text": "a", "max_sentences": 1.5}}`},
		{3, `{"args": {"text": "Mail Dr. Ada Lovelace at ada@example.com or +44 20 7946 0958 by 2024-03-01; $1,200.50 to Acme Corp.", "entity_types": ["EMAIL", "MONEY"], "min_confidence": 0.5}}`},
		{3, `{"args": {"text": "x", "entity_types": ["EMAIL", "EMAIL"]}}`},
		{4, `{"args": {"target": "staging"}, "approved": true}`},
		{4, `{"args": {"target": "staging"}}`},
	} {
		f.Add(seed.target, []byte(seed.body))
	}
	s := startServer(f, func(c *service.Config) {
		c.EnableExec = true
		c.ExecLimits = wasmpy.Limits{Timeout: 2 * time.Second, Memory: 64 << 20} // no fuel ceiling, as serve by default
	})
	handler := s.Config.Handler
	f.Fuzz(func(t *testing.T, target uint8, body []byte) {
		path := fuzzTargets[int(target)%len(fuzzTargets)]
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, req)
		checkAnswer(t, s, path, w)
	})
}

// checkAnswer holds an answer to the invariants FuzzRunRequest states.
func checkAnswer(t *testing.T, s *server, path string, w *httptest.ResponseRecorder) {
	t.Helper()
	raw := w.Body.String()
	require.Equal(t, "application/json", w.Header().Get("Content-Type"), raw)
	require.NotContains(t, raw, "goroutine ", "a Go stack reached the client")
	require.NotContains(t, raw, ".go:", "a Go source path reached the client")
	var body struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Kind    string `json:"kind"`
		} `json:"error"`
		Provenance *struct {
			ExecutionID string `json:"execution_id"`
			Outcome     string `json:"outcome"`
		} `json:"provenance"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &body), raw)
	id := w.Header().Get("X-Execution-Id")
	switch {
	case w.Code == http.StatusOK:
		require.Nil(t, body.Error, raw)
		require.NotEmpty(t, id, "a 200 without a run: %s", raw)
	case w.Code >= 500:
		require.NotEqual(t, http.StatusInternalServerError, w.Code, raw)
		require.NotEmpty(t, id, "a 5xx without a run: %s", raw)
		require.Equal(t, "/exec", path, "a correct skill's valid input failed: %s", raw)
		require.NotEqual(t, wasmpy.KindInternal, body.Error.Kind, raw)
		fallthrough
	default:
		require.NotNil(t, body.Error, raw)
		require.NotEmpty(t, body.Error.Code, raw)
		require.NotEmpty(t, body.Error.Message, raw)
	}
	if id == "" { // refused before running: the service's own one-line reason
		require.Nil(t, body.Provenance, raw)
		require.NotContains(t, body.Error.Message, "\n", "a message is one line")
		return
	}
	require.NotNil(t, body.Provenance, raw)
	require.Equal(t, id, body.Provenance.ExecutionID)
	rec, err := s.store.Get(context.Background(), id)
	require.NoError(t, err, "the run's record is lost")
	require.Equal(t, body.Provenance.Outcome, rec.Outcome)
	require.NotNil(t, rec.FinishedAt, "the run's record is left unfinished")
	for _, actor := range []string{rec.ActorID, rec.ActorType} {
		require.False(t, strings.ContainsFunc(actor, unicode.IsControl), "provenance keeps an unprintable actor %q", actor)
	}
}
