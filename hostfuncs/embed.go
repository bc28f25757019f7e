package hostfuncs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// MaxEmbedTexts bounds the texts of one embed call.
const MaxEmbedTexts = 2048

// EmbedRequest is one embeddings request.
type EmbedRequest struct {
	Input []string
	Model string // "" = LLMConfig.Model
}

// EmbedResponse is the embeddings of a request's texts, in their order.
type EmbedResponse struct {
	Embeddings [][]float64
	Model      string // as the server reports it
	Usage      Usage
}

// Embed asks the server's OpenAI-compatible /embeddings endpoint (OpenAI,
// Ollama, vLLM and llama.cpp serve one) for the embeddings of req.Input.
// Failures are *LLMCallError, as Chat's.
func (c *LLM) Embed(ctx context.Context, req EmbedRequest) (*EmbedResponse, error) {
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
		return nil, &LLMCallError{StatusCode: status, Message: "malformed response: not embeddings JSON", Err: err}
	}
	r := &EmbedResponse{Embeddings: make([][]float64, len(req.Input)), Model: out.Model, Usage: out.Usage}
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= len(req.Input) || r.Embeddings[d.Index] != nil || len(d.Embedding) == 0 {
			return nil, &LLMCallError{StatusCode: status, Message: fmt.Sprintf("malformed response: embedding index %d for %d texts", d.Index, len(req.Input))}
		}
		r.Embeddings[d.Index] = d.Embedding
	}
	for i, e := range r.Embeddings {
		if e == nil {
			return nil, &LLMCallError{StatusCode: status, Message: fmt.Sprintf("malformed response: no embedding for text %d", i)}
		}
	}
	if r.Usage.TotalTokens == 0 {
		r.Usage.TotalTokens = r.Usage.PromptTokens
	}
	return r, nil
}

// EmbedArgs are embed's arguments.
type EmbedArgs struct {
	Texts []string `json:"texts"`
	Model *string  `json:"model"`
}

// Embed returns the embeddings of a.Texts within the session's budget,
// which ask_llm shares: each request is a call, its tokens count, and the
// texts together may not pass MaxPromptBytes. Errors are *Error, as Ask's.
func (s *LLMSession) Embed(ctx context.Context, a EmbedArgs) ([][]float64, error) {
	if !s.llm.Configured() {
		return nil, &Error{Type: LLMError, Message: ErrLLMNotConfigured.Error()}
	}
	switch {
	case len(a.Texts) == 0:
		return nil, Errorf(ValueError, "embed needs at least one text")
	case len(a.Texts) > MaxEmbedTexts:
		return nil, Errorf(ValueError, "embed takes at most %d texts at once, got %d", MaxEmbedTexts, len(a.Texts))
	}
	size := 0
	for _, t := range a.Texts {
		size += len(t)
	}
	if size > s.budget.MaxPromptBytes {
		return nil, Errorf(BudgetError, "texts too large: %d bytes, the limit is %d", size, s.budget.MaxPromptBytes)
	}
	req := EmbedRequest{Input: a.Texts}
	if a.Model != nil {
		req.Model = *a.Model
	}
	if _, err := s.reserve(); err != nil {
		return nil, err
	}
	resp, err := s.llm.Embed(ctx, req)
	if err != nil {
		var ce *LLMCallError
		if errors.As(err, &ce) {
			return nil, fmt.Errorf("%w: %w", ce.guestError(), ce)
		}
		return nil, err
	}
	for _, e := range resp.Embeddings {
		for _, x := range e {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, &Error{Type: LLMError, Message: "the embeddings server returned a number that is not finite"}
			}
		}
	}
	u := resp.Usage
	if u.TotalTokens == 0 {
		u.PromptTokens = (size + 3) / 4
		u.TotalTokens = u.PromptTokens
	}
	s.mu.Lock()
	s.usage.PromptTokens += u.PromptTokens
	s.usage.TotalTokens += u.TotalTokens
	s.mu.Unlock()
	return resp.Embeddings, nil
}
