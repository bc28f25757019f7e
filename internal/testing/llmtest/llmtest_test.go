package llmtest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/wasmpy/wasmpy/internal/testing/llmtest"
)

func post(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(data, &out), string(data))
	return resp.StatusCode, out
}

func TestServer(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Status: 429, Error: "slow down"}, llmtest.Reply{Content: "two words"})
	require.True(t, strings.HasSuffix(srv.URL(), "/v1"))
	require.Equal(t, 2, srv.Pending())
	body := `{"model": "m", "messages": [{"role": "user", "content": "one two three"}], "max_tokens": 7}`

	status, out := post(t, srv.URL()+"/chat/completions", body)
	require.Equal(t, 429, status)
	require.Equal(t, "slow down", out["error"].(map[string]any)["message"])

	status, out = post(t, srv.URL()+"/chat/completions", body)
	require.Equal(t, 200, status)
	require.Equal(t, "m", out["model"])
	choice := out["choices"].([]any)[0].(map[string]any)
	require.Equal(t, "two words", choice["message"].(map[string]any)["content"])
	require.Equal(t, map[string]any{"prompt_tokens": 3.0, "completion_tokens": 2.0, "total_tokens": 5.0}, out["usage"])

	status, out = post(t, srv.URL()+"/chat/completions", body)
	require.Equal(t, 500, status)
	require.Contains(t, out["error"].(map[string]any)["message"], "no scripted reply left")

	srv.Enqueue(llmtest.Reply{Content: "later", NoUsage: true})
	status, _ = post(t, srv.URL()+"/models", body)
	require.Equal(t, 404, status)
	require.Equal(t, 1, srv.Pending(), "a wrong path consumes no reply")
	status, out = post(t, srv.URL()+"/chat/completions", body)
	require.Equal(t, 200, status)
	require.NotContains(t, out, "usage")

	reqs := srv.Requests()
	require.Len(t, reqs, 5)
	require.Equal(t, "POST", reqs[0].Method)
	require.Equal(t, "/v1/chat/completions", reqs[0].Path)
	require.Equal(t, "application/json", reqs[0].Header.Get("Content-Type"))
	require.Equal(t, body, string(reqs[0].Body))
	require.Equal(t, llmtest.Chat{Model: "m", Messages: []llmtest.Message{{Role: "user", Content: "one two three"}}, MaxTokens: ptr(7)}, reqs[0].Chat)
	require.Equal(t, "/v1/models", reqs[3].Path)
}

func ptr[T any](v T) *T { return &v }
