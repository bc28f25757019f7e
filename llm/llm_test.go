package llm

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/wasmpy/wasmpy/internal/testing/llmtest"
)

func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want Config
	}{
		{"empty", nil, Config{}},
		{"wasmpy", map[string]string{
			"WASMPY_LLM_BASE_URL": "http://w/v1", "WASMPY_LLM_MODEL": "m", "WASMPY_LLM_API_KEY": "wk",
			"OPENAI_BASE_URL": "http://o/v1", "OPENAI_API_KEY": "ok",
		}, Config{BaseURL: "http://w/v1", Model: "m", APIKey: "wk"}},
		{"openai fallback", map[string]string{"OPENAI_BASE_URL": "http://o/v1", "OPENAI_MODEL": "om", "OPENAI_API_KEY": "ok"},
			Config{BaseURL: "http://o/v1", Model: "om", APIKey: "ok"}},
		{"key alone configures no URL", map[string]string{"OPENAI_API_KEY": "ok"}, Config{APIKey: "ok"}},
		{"blank is unset", map[string]string{"WASMPY_LLM_BASE_URL": "  ", "OPENAI_BASE_URL": "http://o/v1"},
			Config{BaseURL: "http://o/v1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, ConfigFromEnv(func(k string) string { return tt.env[k] }))
		})
	}
}

func TestChat(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Content: "four", Model: "served-model", Usage: &llmtest.Usage{PromptTokens: 7, CompletionTokens: 1, TotalTokens: 8}})
	c := New(Config{BaseURL: srv.URL() + "/", Model: "default-model", APIKey: "sk-test"})
	temp := 0.5
	resp, err := c.Chat(context.Background(), ChatRequest{
		Messages:    []Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "2+2?"}},
		Temperature: &temp,
		MaxTokens:   5,
	})
	require.NoError(t, err)
	require.Equal(t, &ChatResponse{Content: "four", Model: "served-model", FinishReason: "stop",
		Usage: Usage{PromptTokens: 7, CompletionTokens: 1, TotalTokens: 8}}, resp)

	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	r := reqs[0]
	require.Equal(t, "POST", r.Method)
	require.Equal(t, "/v1/chat/completions", r.Path)
	require.Equal(t, "Bearer sk-test", r.Header.Get("Authorization"))
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	require.Equal(t, "default-model", r.Chat.Model)
	require.Equal(t, []llmtest.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "2+2?"}}, r.Chat.Messages)
	require.Equal(t, 0.5, *r.Chat.Temperature)
	require.Equal(t, 5, *r.Chat.MaxTokens)

	t.Run("no key, no auth header; model override", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Content: "ok"})
		c := New(Config{BaseURL: srv.URL(), Model: "default-model"})
		_, err := c.Chat(context.Background(), ChatRequest{Model: "other", Messages: []Message{{Role: "user", Content: "x"}}})
		require.NoError(t, err)
		r := srv.Requests()[0]
		require.Empty(t, r.Header.Get("Authorization"))
		require.Equal(t, "other", r.Chat.Model)
		require.Nil(t, r.Chat.Temperature)
		require.Nil(t, r.Chat.MaxTokens)
	})
}

func TestChatErrors(t *testing.T) {
	big := `{"choices": [{"message": {"content": "` + strings.Repeat("x", maxResponseBytes) + `"}}]}`
	tests := []struct {
		name      string
		reply     llmtest.Reply
		status    int
		retryable bool
		message   string
	}{
		{"429", llmtest.Reply{Status: 429, Error: "Rate limit reached for requests"}, 429, true, "Rate limit reached for requests"},
		{"500", llmtest.Reply{Status: 500}, 500, true, "Internal Server Error"},
		{"503 plain text", llmtest.Reply{Status: 503, Body: "upstream down"}, 503, true, "upstream down"},
		{"408", llmtest.Reply{Status: 408}, 408, true, "Request Timeout"},
		{"400 OpenAI error", llmtest.Reply{Status: 400, Error: "The model `nope` does not exist"}, 400, false, "The model `nope` does not exist"},
		{"401", llmtest.Reply{Status: 401, Error: "Incorrect API key provided"}, 401, false, "Incorrect API key provided"},
		{"404 string error", llmtest.Reply{Status: 404, Body: `{"error": "no such route"}`}, 404, false, "no such route"},
		{"malformed 200", llmtest.Reply{Body: `not json`}, 200, false, "malformed response"},
		{"no choices", llmtest.Reply{Body: `{"choices": []}`}, 200, false, "unexpected response"},
		{"too large", llmtest.Reply{Body: big}, 200, false, "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t, tt.reply)
			c := New(Config{BaseURL: srv.URL()})
			_, err := c.Chat(context.Background(), ChatRequest{Messages: []Message{{Role: "user", Content: "hi"}}})
			var ce *Error
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tt.status, ce.StatusCode)
			require.Equal(t, tt.retryable, ce.Retryable)
			require.Contains(t, ce.Message, tt.message)
		})
	}

	t.Run("network error", func(t *testing.T) {
		dead := httptest.NewServer(http.NotFoundHandler())
		dead.Close()
		c := New(Config{BaseURL: dead.URL + "/v1"})
		_, err := c.Chat(context.Background(), ChatRequest{})
		var ce *Error
		require.ErrorAs(t, err, &ce)
		require.Zero(t, ce.StatusCode)
		require.True(t, ce.Retryable)
		require.NotContains(t, ce.Message, "127.0.0.1", "host details stay out of the message the guest sees")
		require.Contains(t, ce.Message, "(network error: connection refused)", "the cause is named")
	})

	t.Run("unknown host", func(t *testing.T) {
		c := New(Config{BaseURL: "http://wasmpy-no-such-host.invalid/v1"})
		_, err := c.Chat(context.Background(), ChatRequest{})
		var ce *Error
		require.ErrorAs(t, err, &ce)
		require.Contains(t, ce.Message, "host name")
	})

	t.Run("client timeout", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Content: "late", Delay: 5 * time.Second})
		c := New(Config{BaseURL: srv.URL(), Timeout: 50 * time.Millisecond})
		start := time.Now()
		_, err := c.Chat(context.Background(), ChatRequest{})
		require.Less(t, time.Since(start), 2*time.Second)
		var ce *Error
		require.ErrorAs(t, err, &ce)
		require.True(t, ce.Retryable)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})

	t.Run("ctx deadline", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Content: "late", Delay: 5 * time.Second})
		c := New(Config{BaseURL: srv.URL()})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c.Chat(ctx, ChatRequest{})
		require.Less(t, time.Since(start), 2*time.Second)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Contains(t, err.Error(), "timed out")
	})

	t.Run("ctx canceled", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Content: "late", Delay: 5 * time.Second})
		c := New(Config{BaseURL: srv.URL()})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		_, err := c.Chat(ctx, ChatRequest{})
		var ce *Error
		require.ErrorAs(t, err, &ce)
		require.False(t, ce.Retryable)
		require.ErrorIs(t, err, context.Canceled)
	})

	t.Run("not configured", func(t *testing.T) {
		c := New(Config{})
		require.False(t, c.Configured())
		_, err := c.Chat(context.Background(), ChatRequest{})
		require.ErrorIs(t, err, ErrNotConfigured)
		var ce *Error
		require.ErrorAs(t, err, &ce)
		require.False(t, ce.Retryable)
	})
}

func TestErrorMessage(t *testing.T) {
	err := &Error{StatusCode: 503, Message: "busy", Retryable: true, Err: errors.New("boom")}
	require.Equal(t, "wasmpy: llm: status 503: busy: boom", err.Error())
}
