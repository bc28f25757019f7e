package hostfuncs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/internal/testing/llmtest"
	"github.com/wasmpy/wasmpy/llm"
)

// registerLLM adds ask_llm and embed to t over a client for cfg, as a run
// does, and returns the session to read its usage.
func registerLLM(t Table, cfg llm.Config, budget LLMBudget) *LLMSession {
	s := NewLLMSession(llm.New(cfg), budget)
	s.Register(t)
	return s
}

func TestAskLLM(t *testing.T) {
	srv := llmtest.New(t,
		llmtest.Reply{Content: "Paris"},
		llmtest.Reply{Content: "Rome", Usage: &llmtest.Usage{PromptTokens: 3, CompletionTokens: 2}},
	)
	tbl := Table{}
	sess := registerLLM(tbl, llm.Config{BaseURL: srv.URL(), Model: "m"}, LLMBudget{})

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
		registerLLM(tbl, llm.Config{}, LLMBudget{})
		_, err := call(t, tbl, "ask_llm", M{"prompt": "hi"})
		e := requireGuestError(t, err, LLMError)
		require.Equal(t, "no LLM configured for this sandbox", e.Message)
	})

	t.Run("server errors reach the guest", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Status: 429, Error: "slow down"}, llmtest.Reply{Status: 400, Error: "bad model"}, llmtest.Reply{Content: "ok"})
		tbl := Table{}
		sess := registerLLM(tbl, llm.Config{BaseURL: srv.URL(), Retries: -1}, LLMBudget{})
		_, err := call(t, tbl, "ask_llm", M{"prompt": "hi"})
		e := requireGuestError(t, err, LLMError)
		require.Equal(t, "LLM server returned 429: slow down (retryable)", e.Message)
		var ce *llm.Error
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
		registerLLM(tbl, llm.Config{BaseURL: srv.URL()}, LLMBudget{})
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
		sess := registerLLM(tbl, llm.Config{BaseURL: srv.URL(), Backoff: time.Millisecond}, LLMBudget{})
		out, err := call(t, tbl, "ask_llm", M{"prompt": "hi"})
		require.NoError(t, err)
		require.JSONEq(t, `"ok"`, string(out))
		require.Equal(t, 3, sess.Usage().Calls, "every request sent counts")
	})
	t.Run("not a retryable status", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Status: 400, Error: "bad"}, llmtest.Reply{Content: "never"})
		tbl := Table{}
		registerLLM(tbl, llm.Config{BaseURL: srv.URL(), Backoff: time.Millisecond}, LLMBudget{})
		_, err := call(t, tbl, "ask_llm", M{"prompt": "hi"})
		requireGuestError(t, err, LLMError)
		require.Len(t, srv.Requests(), 1)
	})
	t.Run("the retries give up", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Status: 500}, llmtest.Reply{Status: 500}, llmtest.Reply{Status: 500})
		tbl := Table{}
		registerLLM(tbl, llm.Config{BaseURL: srv.URL(), Retries: 2, Backoff: time.Millisecond}, LLMBudget{})
		_, err := call(t, tbl, "ask_llm", M{"prompt": "hi"})
		e := requireGuestError(t, err, LLMError)
		require.Contains(t, e.Message, "returned 500")
		require.Len(t, srv.Requests(), 3)
	})
	t.Run("no wait past the deadline", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Status: 503}, llmtest.Reply{Content: "too late"})
		tbl := Table{}
		registerLLM(tbl, llm.Config{BaseURL: srv.URL(), Backoff: time.Hour}, LLMBudget{})
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
		registerLLM(tbl, llm.Config{BaseURL: srv.URL(), Backoff: time.Millisecond}, LLMBudget{MaxCalls: 2})
		_, err := call(t, tbl, "ask_llm", M{"prompt": "hi"})
		requireGuestError(t, err, BudgetError)
		require.Len(t, srv.Requests(), 2)
	})
}

func TestAskLLMBudget(t *testing.T) {
	t.Run("calls", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Content: "1"}, llmtest.Reply{Status: 500}, llmtest.Reply{Content: "3"})
		tbl := Table{}
		sess := registerLLM(tbl, llm.Config{BaseURL: srv.URL(), Retries: -1}, LLMBudget{MaxCalls: 2})
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
		sess := registerLLM(tbl, llm.Config{BaseURL: srv.URL()}, LLMBudget{MaxTokens: 10})
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
		sess := registerLLM(tbl, llm.Config{BaseURL: srv.URL()}, LLMBudget{})
		_, err := call(t, tbl, "ask_llm", M{"prompt": "1234", "system": "5678"})
		require.NoError(t, err)
		require.Equal(t, LLMUsage{Calls: 1, PromptTokens: 2, CompletionTokens: 2, TotalTokens: 4}, sess.Usage())
	})

	t.Run("prompt size", func(t *testing.T) {
		srv := llmtest.New(t)
		tbl := Table{}
		registerLLM(tbl, llm.Config{BaseURL: srv.URL()}, LLMBudget{MaxPromptBytes: 10})
		_, err := call(t, tbl, "ask_llm", M{"prompt": "123456", "system": "12345"})
		e := requireGuestError(t, err, BudgetError)
		require.Contains(t, e.Message, "prompt too large")
		require.Empty(t, srv.Requests())
	})

	t.Run("defaults", func(t *testing.T) {
		s := NewLLMSession(llm.New(llm.Config{}), LLMBudget{})
		require.Equal(t, LLMBudget{MaxCalls: DefaultLLMMaxCalls, MaxTokens: DefaultLLMMaxTokens, MaxPromptBytes: DefaultLLMMaxPromptSize}, s.budget)
	})
}

func TestGuestLLMError(t *testing.T) {
	err := &llm.Error{StatusCode: 503, Message: "busy", Retryable: true, Err: errors.New("boom")}
	require.Equal(t, &Error{Type: LLMError, Message: "LLM server returned 503: busy (retryable)"}, guestLLMError(err))

	// No response: the message names the cause, not the host's address.
	dead := &llm.Error{Message: "LLM request failed (network error: connection refused)", Retryable: true}
	require.Equal(t, "LLM request failed (network error: connection refused) (retryable)", guestLLMError(dead).Message)
}
