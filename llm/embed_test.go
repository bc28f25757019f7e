package llm

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/internal/testing/llmtest"
)

func TestEmbed(t *testing.T) {
	srv := llmtest.New(t)
	c := New(Config{BaseURL: srv.URL(), Model: "default-model", APIKey: "sk-test"})
	resp, err := c.Embed(context.Background(), EmbedRequest{Input: []string{"one two", "three"}})
	require.NoError(t, err)
	require.Equal(t, [][]float64{llmtest.Embedding("one two"), llmtest.Embedding("three")}, resp.Embeddings)
	require.Equal(t, "default-model", resp.Model)
	require.Equal(t, Usage{PromptTokens: 3, TotalTokens: 3}, resp.Usage)
	r := srv.Requests()[0]
	require.Equal(t, "/v1/embeddings", r.Path)
	require.Equal(t, "Bearer sk-test", r.Header.Get("Authorization"))
	var body map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &body))
	require.Equal(t, map[string]any{"model": "default-model", "input": []any{"one two", "three"}}, body)

	_, err = New(Config{}).Embed(context.Background(), EmbedRequest{Input: []string{"x"}})
	require.ErrorIs(t, err, ErrNotConfigured)
}
