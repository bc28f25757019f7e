package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/service"
	"github.com/wasmpy/wasmpy/skills"
)

// classicClient is a client written to the classic Code Executor spec: its
// routes, its request body and the fields it reads, nothing of wasmpy's own.
type classicClient struct {
	base string
	http *http.Client
}

func (c classicClient) call(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd bytes.Buffer
	if body != nil {
		require.NoError(t, json.NewEncoder(&rd).Encode(body))
	}
	req, err := http.NewRequest(method, c.base+path, &rd)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, out
}

func (c classicClient) execute(t *testing.T, skill string, args map[string]any, actorID, actorType string) (int, map[string]any) {
	return c.call(t, "POST", "/skills/execute", map[string]any{"skill": skill, "args": args, "actor_id": actorID, "actor_type": actorType})
}

var hexHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

func TestClassicClient(t *testing.T) {
	s := startServer(t, func(c *service.Config) { c.Version = "v9.9.9" })
	c := classicClient{base: s.URL, http: s.Client()}

	status, root := c.call(t, "GET", "/", nil)
	require.Equal(t, 200, status)
	require.Equal(t, "wasmpy", root["name"])
	require.Equal(t, "v9.9.9", root["version"])
	require.Equal(t, "/skills/execute", root["links"].(map[string]any)["execute"])

	status, health := c.call(t, "GET", "/health", nil)
	require.Equal(t, 200, status)
	require.Equal(t, "ok", health["status"])

	status, list := c.call(t, "GET", "/skills/list", nil)
	require.Equal(t, 200, status)
	var names []string
	for _, sk := range list["skills"].([]any) {
		m := sk.(map[string]any)
		require.NotEmpty(t, m["version"])
		require.NotEmpty(t, m["description"])
		names = append(names, m["name"].(string))
	}
	require.Contains(t, names, "text_summarize")
	require.EqualValues(t, len(names), list["count"])

	status, info := c.call(t, "GET", "/skills/text_summarize", nil)
	require.Equal(t, 200, status)
	require.Equal(t, []any{"none"}, info["safety_flags"])
	require.Equal(t, false, info["requires_approval"])
	require.EqualValues(t, 10000, info["limits"].(map[string]any)["timeout_ms"])
	status, schema := c.call(t, "GET", "/skills/text_summarize/schema", nil)
	require.Equal(t, 200, status)
	require.Equal(t, "object", schema["input"].(map[string]any)["type"])

	args := map[string]any{"text": "Cats purr. Cats sleep a lot. Dogs bark. Cats and dogs play.", "max_sentences": 1}
	status, resp := c.execute(t, "text_summarize", args, "agent-7", "agent")
	require.Equal(t, 200, status, "%v", resp)
	result := resp["result"].(map[string]any)
	require.Contains(t, result["summary"], "Cats")
	require.NotNil(t, result["compression_ratio"])

	prov := resp["provenance"].(map[string]any)
	require.True(t, provenance.ValidID(prov["execution_id"].(string)))
	require.Equal(t, "text_summarize", prov["skill_name"])
	require.Equal(t, "1.0.0", prov["skill_version"])
	require.Equal(t, "agent-7", prov["actor_id"])
	require.Equal(t, "agent", prov["actor_type"])
	require.Regexp(t, hexHash, prov["inputs_hash"])
	wantIn, err := json.Marshal(args)
	require.NoError(t, err)
	h, err := provenance.Hash(wantIn)
	require.NoError(t, err)
	require.Equal(t, h, prov["inputs_hash"], "the hash of the canonical JSON of the args")
	out, err := json.Marshal(result)
	require.NoError(t, err)
	h, err = provenance.Hash(out)
	require.NoError(t, err)
	require.Equal(t, h, prov["outputs_hash"])
	require.Equal(t, []any{}, prov["tool_ids"], "a pure-compute skill calls no tool")
	ts, err := time.Parse(time.RFC3339Nano, prov["timestamp"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), ts, time.Hour)
	require.Greater(t, prov["execution_time_ms"].(float64), 0.0)
	require.Equal(t, true, prov["success"])

	// The record kept is the one answered, classic names included.
	status, rec := c.call(t, "GET", "/executions/"+prov["execution_id"].(string), nil)
	require.Equal(t, 200, status)
	require.Equal(t, prov, rec)

	// Errors: the stable codes.
	for _, tc := range []struct {
		name   string
		body   map[string]any
		status int
		code   string
	}{
		{"unknown skill", map[string]any{"skill": "nope", "args": map[string]any{}}, 404, "unknown_skill"},
		{"no skill", map[string]any{"args": map[string]any{}}, 400, "bad_request"},
		{"bad args", map[string]any{"skill": "text_summarize", "args": map[string]any{"text": 3}}, 422, "invalid_input"},
		{"approval", map[string]any{"skill": "needs_approval", "args": map[string]any{"target": "x"}}, 403, "approval_required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, resp := c.call(t, "POST", "/skills/execute", tc.body)
			require.Equal(t, tc.status, status, "%v", resp)
			require.Equal(t, tc.code, resp["error"].(map[string]any)["code"])
		})
	}

	// A field the body does not know is ignored, as the classic service
	// (pydantic) ignores it; our own routes refuse it.
	status, resp = c.call(t, "POST", "/skills/execute", map[string]any{"skill": "text_summarize", "args": args,
		"session_id": "s-1", "metadata": map[string]any{"trace": "x"}})
	require.Equal(t, 200, status, "%v", resp)
	require.Contains(t, resp["result"].(map[string]any)["summary"], "Cats")
	status, resp = c.call(t, "POST", "/skills/text_summarize/execute", map[string]any{"args": args, "session_id": "s-1"})
	require.Equal(t, 400, status, "%v", resp)
	require.Equal(t, "bad_request", resp["error"].(map[string]any)["code"])

	// A failed run: the error, no result, and a record that says so.
	status, resp = c.execute(t, "boom", map[string]any{}, "agent-7", "agent")
	require.Equal(t, 502, status)
	require.Equal(t, "run_failed", resp["error"].(map[string]any)["code"])
	require.Nil(t, resp["result"])
	require.Equal(t, false, resp["provenance"].(map[string]any)["success"])
	require.Equal(t, "exception", resp["provenance"].(map[string]any)["outcome"])

	// GET / is exact: other paths are still 404, POST / a 405.
	status, resp = c.call(t, "GET", "/nope", nil)
	require.Equal(t, 404, status)
	status, _ = c.call(t, "POST", "/", map[string]any{})
	require.Equal(t, 405, status)
}

// With no skill loaded and none loading, /health says degraded.
func TestHealthDegraded(t *testing.T) {
	ex, _, _ := fixtures(t)
	reg, err := skills.LoadDir(context.Background(), t.TempDir(), skills.LoadOptions{Checker: ex.Checker()})
	require.NoError(t, err)
	s := startServer(t, func(c *service.Config) { c.Registry = reg })
	r := s.do(t, "GET", "/health", "")
	require.Equal(t, 200, r.status)
	require.Equal(t, "degraded", r.body["status"])
	require.EqualValues(t, 0, r.body["skills"])
}
