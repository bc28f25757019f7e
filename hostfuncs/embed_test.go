package hostfuncs

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/internal/testing/llmtest"
	"github.com/wasmpy/wasmpy/llm"
)

// embed spends ask_llm's budget: calls and tokens are shared.
func TestEmbedBudget(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Content: "ok"})
	s := NewLLMSession(llm.New(llm.Config{BaseURL: srv.URL()}), LLMBudget{MaxCalls: 2, MaxPromptBytes: 10})
	ctx := context.Background()

	vs, err := s.Embed(ctx, EmbedArgs{Texts: []string{"a b", "c"}})
	require.NoError(t, err)
	require.Len(t, vs, 2)
	require.Equal(t, LLMUsage{Calls: 1, PromptTokens: 3, TotalTokens: 3}, s.Usage())

	_, err = s.Ask(ctx, AskArgs{Prompt: "hi"})
	require.NoError(t, err)

	_, err = s.Embed(ctx, EmbedArgs{Texts: []string{"x"}})
	var e *Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, BudgetError, e.Type)
	require.Contains(t, e.Message, "call budget exhausted: 2 calls made")

	for _, tc := range []struct {
		args EmbedArgs
		typ  string
		msg  string
	}{
		{EmbedArgs{}, ValueError, "at least one text"},
		{EmbedArgs{Texts: make([]string, MaxEmbedTexts+1)}, ValueError, "at most 2048 texts"},
		{EmbedArgs{Texts: []string{"0123456789", "x"}}, BudgetError, "texts too large: 11 bytes"},
	} {
		_, err := s.Embed(ctx, tc.args)
		require.True(t, errors.As(err, &e), "%v", err)
		require.Equal(t, tc.typ, e.Type)
		require.Contains(t, e.Message, tc.msg)
	}
	require.Len(t, srv.Requests(), 2, "refused calls never reach the server")
}
