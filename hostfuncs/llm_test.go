package hostfuncs

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

func TestLLMConfigFromEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want LLMConfig
	}{
		{"empty", nil, LLMConfig{}},
		{"wasmpy", map[string]string{
			"WASMPY_LLM_BASE_URL": "http://w/v1", "WASMPY_LLM_MODEL": "m", "WASMPY_LLM_API_KEY": "wk",
			"OPENAI_BASE_URL": "http://o/v1", "OPENAI_API_KEY": "ok",
		}, LLMConfig{BaseURL: "http://w/v1", Model: "m", APIKey: "wk"}},
		{"openai fallback", map[string]string{"OPENAI_BASE_URL": "http://o/v1", "OPENAI_MODEL": "om", "OPENAI_API_KEY": "ok"},
			LLMConfig{BaseURL: "http://o/v1", Model: "om", APIKey: "ok"}},
		{"key alone configures no URL", map[string]string{"OPENAI_API_KEY": "ok"}, LLMConfig{APIKey: "ok"}},
		{"blank is unset", map[string]string{"WASMPY_LLM_BASE_URL": "  ", "OPENAI_BASE_URL": "http://o/v1"},
			LLMConfig{BaseURL: "http://o/v1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, LLMConfigFromEnv(func(k string) string { return tt.env[k] }))
		})
	}
}

func TestLLMChat(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Content: "four", Model: "served-model", Usage: &llmtest.Usage{PromptTokens: 7, CompletionTokens: 1, TotalTokens: 8}})
	c := NewLLM(LLMConfig{BaseURL: srv.URL() + "/", Model: "default-model", APIKey: "sk-test"})
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
		c := NewLLM(LLMConfig{BaseURL: srv.URL(), Model: "default-model"})
		_, err := c.Chat(context.Background(), ChatRequest{Model: "other", Messages: []Message{{Role: "user", Content: "x"}}})
		require.NoError(t, err)
		r := srv.Requests()[0]
		require.Empty(t, r.Header.Get("Authorization"))
		require.Equal(t, "other", r.Chat.Model)
		require.Nil(t, r.Chat.Temperature)
		require.Nil(t, r.Chat.MaxTokens)
	})
}

func TestLLMChatErrors(t *testing.T) {
	big := `{"choices": [{"message": {"content": "` + strings.Repeat("x", maxLLMResponseBytes) + `"}}]}`
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
			c := NewLLM(LLMConfig{BaseURL: srv.URL()})
			_, err := c.Chat(context.Background(), ChatRequest{Messages: []Message{{Role: "user", Content: "hi"}}})
			var ce *LLMCallError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tt.status, ce.StatusCode)
			require.Equal(t, tt.retryable, ce.Retryable)
			require.Contains(t, ce.Message, tt.message)
		})
	}

	t.Run("network error", func(t *testing.T) {
		dead := httptest.NewServer(http.NotFoundHandler())
		dead.Close()
		c := NewLLM(LLMConfig{BaseURL: dead.URL + "/v1"})
		_, err := c.Chat(context.Background(), ChatRequest{})
		var ce *LLMCallError
		require.ErrorAs(t, err, &ce)
		require.Zero(t, ce.StatusCode)
		require.True(t, ce.Retryable)
		msg := ce.guestError().Message
		require.NotContains(t, msg, "127.0.0.1", "host details stay on the host")
		require.Contains(t, msg, "(network error: connection refused)", "the cause is named")
	})

	t.Run("unknown host", func(t *testing.T) {
		c := NewLLM(LLMConfig{BaseURL: "http://wasmpy-no-such-host.invalid/v1"})
		_, err := c.Chat(context.Background(), ChatRequest{})
		var ce *LLMCallError
		require.ErrorAs(t, err, &ce)
		require.Contains(t, ce.guestError().Message, "host name")
	})

	t.Run("client timeout", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Content: "late", Delay: 5 * time.Second})
		c := NewLLM(LLMConfig{BaseURL: srv.URL(), Timeout: 50 * time.Millisecond})
		start := time.Now()
		_, err := c.Chat(context.Background(), ChatRequest{})
		require.Less(t, time.Since(start), 2*time.Second)
		var ce *LLMCallError
		require.ErrorAs(t, err, &ce)
		require.True(t, ce.Retryable)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})

	t.Run("ctx deadline", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Content: "late", Delay: 5 * time.Second})
		c := NewLLM(LLMConfig{BaseURL: srv.URL()})
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
		c := NewLLM(LLMConfig{BaseURL: srv.URL()})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		_, err := c.Chat(ctx, ChatRequest{})
		var ce *LLMCallError
		require.ErrorAs(t, err, &ce)
		require.False(t, ce.Retryable)
		require.ErrorIs(t, err, context.Canceled)
	})

	t.Run("not configured", func(t *testing.T) {
		c := NewLLM(LLMConfig{})
		require.False(t, c.Configured())
		_, err := c.Chat(context.Background(), ChatRequest{})
		require.ErrorIs(t, err, ErrLLMNotConfigured)
		var ce *LLMCallError
		require.ErrorAs(t, err, &ce)
		require.False(t, ce.Retryable)
	})
}

func TestAskLLM(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Reply{Content: "Paris"},
		llmtest.Reply{Content: "Rome", Usage: &llmtest.Usage{PromptTokens: 3, CompletionTokens: 2}},
	)
	tbl := Table{}
	sess := NewLLM(LLMConfig{BaseURL: srv.URL(), Model: "m"}).Register(tbl, LLMBudget{})

	out, err := call(t, tbl, "ask_llm", M{"prompt": "capital of France?"})
	require.NoError(t, err)
	require.JSONEq(t, `"Paris"`, string(out))
	out, err = call(t, tbl, "ask_llm", M{"prompt": "capital of Italy?", "system": "one word", "model": "big", "temperature": 0, "max_tokens": 10})
	require.NoError(t, err)
	require.JSONEq(t, `"Rome"`, string(out))

	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	require.Equal(t, []llmtest.Message{{Role: "user", Content: "capital of France?"}}, reqs[0].Chat.Messages)
	require.Equal(t, "m", reqs[0].Chat.Model)
	require.Nil(t, reqs[0].Chat.Temperature)
	require.Nil(t, reqs[0].Chat.MaxTokens, "plenty of budget left: no max_tokens")
	require.Equal(t, []llmtest.Message{{Role: "system", Content: "one word"}, {Role: "user", Content: "capital of Italy?"}}, reqs[1].Chat.Messages)
	require.Equal(t, "big", reqs[1].Chat.Model)
	require.Equal(t, 0.0, *reqs[1].Chat.Temperature)
	require.Equal(t, 10, *reqs[1].Chat.MaxTokens)

	// First: 3 prompt words + 1 completion word (llmtest's word counts);
	// second: 3 + 2 reported, total computed.
	require.Equal(t, LLMUsage{Calls: 2, PromptTokens: 6, CompletionTokens: 3, TotalTokens: 9}, sess.Usage())

	bad := []struct {
		name string
		args any
		want string
	}{
		{"empty prompt", M{"prompt": ""}, ValueError},
		{"no prompt", M{}, ValueError},
		{"temperature", M{"prompt": "x", "temperature": 3}, ValueError},
		{"max_tokens", M{"prompt": "x", "max_tokens": 0}, ValueError},
		{"unknown key", M{"prompt": "x", "top_p": 1}, ValueError},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := call(t, tbl, "ask_llm", tt.args)
			requireGuestError(t, err, tt.want)
		})
	}
	require.Len(t, srv.Requests(), 2, "bad arguments send nothing")
}

func TestAskLLMErrors(t *testing.T) {
	t.Run("not configured", func(t *testing.T) {
		tbl := Table{}
		NewLLM(LLMConfig{}).Register(tbl, LLMBudget{})
		_, err := call(t, tbl, "ask_llm", M{"prompt": "hi"})
		e := requireGuestError(t, err, LLMError)
		require.Equal(t, "no LLM configured for this sandbox", e.Message)
	})

	t.Run("server errors reach the guest", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Status: 429, Error: "slow down"}, llmtest.Reply{Status: 400, Error: "bad model"}, llmtest.Reply{Content: "ok"})
		tbl := Table{}
		sess := NewLLM(LLMConfig{BaseURL: srv.URL(), Retries: -1}).Register(tbl, LLMBudget{})
		_, err := call(t, tbl, "ask_llm", M{"prompt": "hi"})
		e := requireGuestError(t, err, LLMError)
		require.Equal(t, "LLM server returned 429: slow down (retryable)", e.Message)
		var ce *LLMCallError
		require.ErrorAs(t, err, &ce, "the Go error stays in the chain")
		require.True(t, ce.Retryable)

		_, err = call(t, tbl, "ask_llm", M{"prompt": "hi"})
		e = requireGuestError(t, err, LLMError)
		require.Equal(t, "LLM server returned 400: bad model", e.Message)

		_, err = call(t, tbl, "ask_llm", M{"prompt": "hi"})
		require.NoError(t, err)
		require.Equal(t, 3, sess.Usage().Calls, "failed calls count")
	})

	t.Run("deadline", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Content: "late", Delay: 5 * time.Second})
		tbl := Table{}
		NewLLM(LLMConfig{BaseURL: srv.URL()}).Register(tbl, LLMBudget{})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := callCtx(ctx, t, tbl, "ask_llm", M{"prompt": "hi"})
		e := requireGuestError(t, err, LLMError)
		require.Contains(t, e.Message, "timed out")
	})
}

// ask_llm retries a 429 and a 5xx with backoff, as codegen does; a 4xx
// other than 429 is final.
func TestAskLLMRetries(t *testing.T) {
	t.Run("retried until it passes", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Status: 429}, llmtest.Reply{Status: 503}, llmtest.Reply{Content: "ok"})
		tbl := Table{}
		sess := NewLLM(LLMConfig{BaseURL: srv.URL(), Backoff: time.Millisecond}).Register(tbl, LLMBudget{})
		out, err := call(t, tbl, "ask_llm", M{"prompt": "hi"})
		require.NoError(t, err)
		require.JSONEq(t, `"ok"`, string(out))
		require.Equal(t, 3, sess.Usage().Calls, "every request sent counts")
	})
	t.Run("not a retryable status", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Status: 400, Error: "bad"}, llmtest.Reply{Content: "never"})
		tbl := Table{}
		NewLLM(LLMConfig{BaseURL: srv.URL(), Backoff: time.Millisecond}).Register(tbl, LLMBudget{})
		_, err := call(t, tbl, "ask_llm", M{"prompt": "hi"})
		requireGuestError(t, err, LLMError)
		require.Len(t, srv.Requests(), 1)
	})
	t.Run("the retries give up", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Status: 500}, llmtest.Reply{Status: 500}, llmtest.Reply{Status: 500})
		tbl := Table{}
		NewLLM(LLMConfig{BaseURL: srv.URL(), Retries: 2, Backoff: time.Millisecond}).Register(tbl, LLMBudget{})
		_, err := call(t, tbl, "ask_llm", M{"prompt": "hi"})
		e := requireGuestError(t, err, LLMError)
		require.Contains(t, e.Message, "returned 500")
		require.Len(t, srv.Requests(), 3)
	})
	t.Run("no wait past the deadline", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Status: 503}, llmtest.Reply{Content: "too late"})
		tbl := Table{}
		NewLLM(LLMConfig{BaseURL: srv.URL(), Backoff: time.Hour}).Register(tbl, LLMBudget{})
		// The delay is drawn from [15s, 30s] (the cap), beyond the deadline.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := callCtx(ctx, t, tbl, "ask_llm", M{"prompt": "hi"})
		requireGuestError(t, err, LLMError)
		require.Len(t, srv.Requests(), 1, "a delay beyond the deadline is not waited out")
		require.NoError(t, ctx.Err(), "it failed at once")
	})
	t.Run("the budget bounds the retries", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Status: 503}, llmtest.Reply{Status: 503}, llmtest.Reply{Content: "ok"})
		tbl := Table{}
		NewLLM(LLMConfig{BaseURL: srv.URL(), Backoff: time.Millisecond}).Register(tbl, LLMBudget{MaxCalls: 2})
		_, err := call(t, tbl, "ask_llm", M{"prompt": "hi"})
		requireGuestError(t, err, BudgetError)
		require.Len(t, srv.Requests(), 2)
	})
}

func TestAskLLMBudget(t *testing.T) {
	t.Run("calls", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Content: "1"}, llmtest.Reply{Status: 500}, llmtest.Reply{Content: "3"})
		tbl := Table{}
		sess := NewLLM(LLMConfig{BaseURL: srv.URL(), Retries: -1}).Register(tbl, LLMBudget{MaxCalls: 2})
		_, err := call(t, tbl, "ask_llm", M{"prompt": "a"})
		require.NoError(t, err)
		_, err = call(t, tbl, "ask_llm", M{"prompt": "b"})
		requireGuestError(t, err, LLMError)
		_, err = call(t, tbl, "ask_llm", M{"prompt": "c"})
		e := requireGuestError(t, err, BudgetError)
		require.Contains(t, e.Message, "call budget")
		require.Len(t, srv.Requests(), 2)
		require.Equal(t, 2, sess.Usage().Calls)
	})

	t.Run("tokens", func(t *testing.T) {
		srv := llmtest.New(t,
			llmtest.Reply{Content: "a", Usage: &llmtest.Usage{TotalTokens: 8}},
			llmtest.Reply{Content: "b", Usage: &llmtest.Usage{TotalTokens: 8}},
			llmtest.Reply{Content: "c"},
		)
		tbl := Table{}
		sess := NewLLM(LLMConfig{BaseURL: srv.URL()}).Register(tbl, LLMBudget{MaxTokens: 10})
		_, err := call(t, tbl, "ask_llm", M{"prompt": "x", "max_tokens": 50})
		require.NoError(t, err)
		_, err = call(t, tbl, "ask_llm", M{"prompt": "x"})
		require.NoError(t, err)
		_, err = call(t, tbl, "ask_llm", M{"prompt": "x"})
		e := requireGuestError(t, err, BudgetError)
		require.Contains(t, e.Message, "token budget")

		reqs := srv.Requests()
		require.Len(t, reqs, 2)
		require.Equal(t, 10, *reqs[0].Chat.MaxTokens, "max_tokens lowered to the budget")
		require.Equal(t, 2, *reqs[1].Chat.MaxTokens, "what is left")
		require.Equal(t, 16, sess.Usage().TotalTokens)
	})

	t.Run("estimated without usage", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Content: "12345678", NoUsage: true})
		tbl := Table{}
		sess := NewLLM(LLMConfig{BaseURL: srv.URL()}).Register(tbl, LLMBudget{})
		_, err := call(t, tbl, "ask_llm", M{"prompt": "1234", "system": "5678"})
		require.NoError(t, err)
		require.Equal(t, LLMUsage{Calls: 1, PromptTokens: 2, CompletionTokens: 2, TotalTokens: 4}, sess.Usage())
	})

	t.Run("prompt size", func(t *testing.T) {
		srv := llmtest.New(t)
		tbl := Table{}
		NewLLM(LLMConfig{BaseURL: srv.URL()}).Register(tbl, LLMBudget{MaxPromptBytes: 10})
		_, err := call(t, tbl, "ask_llm", M{"prompt": "123456", "system": "12345"})
		e := requireGuestError(t, err, BudgetError)
		require.Contains(t, e.Message, "prompt too large")
		require.Empty(t, srv.Requests())
	})

	t.Run("defaults", func(t *testing.T) {
		s := NewLLM(LLMConfig{}).Session(LLMBudget{})
		require.Equal(t, LLMBudget{MaxCalls: DefaultLLMMaxCalls, MaxTokens: DefaultLLMMaxTokens, MaxPromptBytes: DefaultLLMMaxPromptSize}, s.budget)
	})
}

func TestLLMCallErrorMessage(t *testing.T) {
	err := &LLMCallError{StatusCode: 503, Message: "busy", Retryable: true, Err: errors.New("boom")}
	require.Equal(t, "wasmpy: llm: status 503: busy: boom", err.Error())
	require.Equal(t, &Error{Type: LLMError, Message: "LLM server returned 503: busy (retryable)"}, err.guestError())
}
