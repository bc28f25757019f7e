package llm

import (
	"context"
	"encoding/json"
	"fmt"
)

// EmbedRequest is one embeddings request.
type EmbedRequest struct {
	Input []string
	Model string // "" = Config.Model
}

// EmbedResponse is the embeddings of a request's texts, in their order.
type EmbedResponse struct {
	Embeddings [][]float64
	Model      string // as the server reports it
	Usage      Usage
}

// Embed asks the server's OpenAI-compatible /embeddings endpoint (OpenAI,
// Ollama, vLLM and llama.cpp serve one) for the embeddings of req.Input.
// Failures are *Error, as Chat's.
func (c *Client) Embed(ctx context.Context, req EmbedRequest) (*EmbedResponse, error) {
	wire := struct {
		Model string   `json:"model,omitempty"`
		Input []string `json:"input"`
	}{req.Model, req.Input}
	if wire.Model == "" {
		wire.Model = c.cfg.Model
	}
	data, status, err := c.post(ctx, "/embeddings", wire)
	if err != nil {
		return nil, err
	}
	var out struct {
		Model string `json:"model"`
		Data  []struct {
			Index     int       `json:"index"`
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
		Usage Usage `json:"usage"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, &Error{StatusCode: status, Message: "malformed response: not embeddings JSON", Err: err}
	}
	r := &EmbedResponse{Embeddings: make([][]float64, len(req.Input)), Model: out.Model, Usage: out.Usage}
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= len(req.Input) || r.Embeddings[d.Index] != nil || len(d.Embedding) == 0 {
			return nil, &Error{StatusCode: status, Message: fmt.Sprintf("malformed response: embedding index %d for %d texts", d.Index, len(req.Input))}
		}
		r.Embeddings[d.Index] = d.Embedding
	}
	for i, e := range r.Embeddings {
		if e == nil {
			return nil, &Error{StatusCode: status, Message: fmt.Sprintf("malformed response: no embedding for text %d", i)}
		}
	}
	if r.Usage.TotalTokens == 0 {
		r.Usage.TotalTokens = r.Usage.PromptTokens
	}
	return r, nil
}
