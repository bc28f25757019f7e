package hostfuncs

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/wasmpy/wasmpy/llm"
)

// The guest's ask_llm and embed: the capability over an llm.Client, under a
// run's budget. The client (the wire protocol, retries, embeddings) is
// package llm.

// Budget defaults and bounds.
const (
	DefaultLLMMaxCalls      = 20
	DefaultLLMMaxTokens     = 100000
	DefaultLLMMaxPromptSize = 1 << 20

	// MaxEmbedTexts bounds the texts of one embed call.
	MaxEmbedTexts = 2048

	// Below this many tokens left, ask_llm sends the remainder as max_tokens
	// even when the guest set none. Above it, it sends none (servers reject a
	// max_tokens beyond the model's output limit).
	budgetMaxTokensFloor = 4096
)

// LLMBudget bounds one run's use of ask_llm and embed, together. Zero
// fields take the defaults.
type LLMBudget struct {
	MaxCalls       int // requests sent (0 = DefaultLLMMaxCalls)
	MaxTokens      int // total tokens, prompt and completion (0 = DefaultLLMMaxTokens)
	MaxPromptBytes int // prompt + system of one call (0 = DefaultLLMMaxPromptSize)
}

// LLMUsage is what a session has spent so far.
type LLMUsage struct {
	Calls            int `json:"calls"`
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// LLMSession is one run's use of an LLM under a budget. Safe for concurrent
// use.
type LLMSession struct {
	llm    *llm.Client
	budget LLMBudget

	mu    sync.Mutex
	usage LLMUsage
}

// NewLLMSession starts a run's use of c under budget.
func NewLLMSession(c *llm.Client, budget LLMBudget) *LLMSession {
	if budget.MaxCalls <= 0 {
		budget.MaxCalls = DefaultLLMMaxCalls
	}
	if budget.MaxTokens <= 0 {
		budget.MaxTokens = DefaultLLMMaxTokens
	}
	if budget.MaxPromptBytes <= 0 {
		budget.MaxPromptBytes = DefaultLLMMaxPromptSize
	}
	return &LLMSession{llm: c, budget: budget}
}

// Usage returns what the session has spent so far.
func (s *LLMSession) Usage() LLMUsage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usage
}

// AskArgs are ask_llm's arguments.
type AskArgs struct {
	Prompt      string   `json:"prompt"`
	System      *string  `json:"system"`
	Model       *string  `json:"model"`
	Temperature *float64 `json:"temperature"`
	MaxTokens   *int     `json:"max_tokens"`
}

// Ask sends one user prompt (and optional system message) within the budget
// and returns the reply's content. Errors are *Error: ValueError for bad
// arguments, BudgetExceeded, or LLMError (the llm.Error is in the chain).
//
// A request that may pass next time (429, 5xx, a network error) is retried
// with backoff (llm.Config.Retries), but only while the run's deadline leaves
// time for the wait. Every request sent counts as a call, retries and
// failures too. Tokens are
// counted from the server's usage report, estimated at 4 bytes per token
// when it sends none. max_tokens is lowered to what the budget has left (and
// set to it when fewer than 4096 tokens are left), so one reply can overshoot
// MaxTokens only when the guest sets no max_tokens and the budget has plenty
// left.
func (s *LLMSession) Ask(ctx context.Context, a AskArgs) (string, error) {
	if !s.llm.Configured() {
		return "", &Error{Type: LLMError, Message: llm.ErrNotConfigured.Error()}
	}
	if a.Prompt == "" {
		return "", Errorf(ValueError, "ask_llm needs a non-empty prompt")
	}
	if a.Temperature != nil && (*a.Temperature < 0 || *a.Temperature > 2) {
		return "", Errorf(ValueError, "temperature must be between 0 and 2, got %v", *a.Temperature)
	}
	if a.MaxTokens != nil && *a.MaxTokens <= 0 {
		return "", Errorf(ValueError, "max_tokens must be positive, got %d", *a.MaxTokens)
	}
	req := llm.ChatRequest{Temperature: a.Temperature}
	promptBytes := len(a.Prompt)
	if a.System != nil && *a.System != "" {
		req.Messages = append(req.Messages, llm.Message{Role: "system", Content: *a.System})
		promptBytes += len(*a.System)
	}
	req.Messages = append(req.Messages, llm.Message{Role: "user", Content: a.Prompt})
	if a.Model != nil {
		req.Model = *a.Model
	}
	if promptBytes > s.budget.MaxPromptBytes {
		return "", Errorf(BudgetError, "prompt too large: %d bytes, the limit is %d", promptBytes, s.budget.MaxPromptBytes)
	}

	policy := s.llm.RetryPolicy()
	var resp *llm.ChatResponse
	for retry := 0; ; retry++ {
		left, err := s.reserve()
		if err != nil {
			return "", err
		}
		switch {
		case a.MaxTokens != nil:
			req.MaxTokens = min(*a.MaxTokens, left)
		case left < budgetMaxTokensFloor:
			req.MaxTokens = left
		}
		resp, err = s.llm.Chat(ctx, req)
		if err == nil {
			break
		}
		var ce *llm.Error
		if !errors.As(err, &ce) {
			return "", err
		}
		if !policy.Wait(ctx, retry, err) {
			return "", fmt.Errorf("%w: %w", guestLLMError(ce), ce)
		}
	}
	u := resp.Usage
	if u.TotalTokens == 0 {
		u.PromptTokens = (promptBytes + 3) / 4
		u.CompletionTokens = (len(resp.Content) + 3) / 4
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	s.mu.Lock()
	s.usage.PromptTokens += u.PromptTokens
	s.usage.CompletionTokens += u.CompletionTokens
	s.usage.TotalTokens += u.TotalTokens
	s.mu.Unlock()
	return resp.Content, nil
}

// reserve counts one request against the budget, and returns how many
// tokens are left.
func (s *LLMSession) reserve() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.usage.Calls >= s.budget.MaxCalls:
		return 0, Errorf(BudgetError, "LLM call budget exhausted: %d calls made, the limit is %d", s.usage.Calls, s.budget.MaxCalls)
	case s.usage.TotalTokens >= s.budget.MaxTokens:
		return 0, Errorf(BudgetError, "LLM token budget exhausted: %d tokens used, the limit is %d", s.usage.TotalTokens, s.budget.MaxTokens)
	}
	s.usage.Calls++
	return s.budget.MaxTokens - s.usage.TotalTokens, nil
}

// Register adds ask_llm and embed to t:
//
//	ask_llm {"prompt": str, "system": str|null, "model": str|null,
//	         "temperature": float|null, "max_tokens": int|null} → str
//	embed   {"texts": [str, ...], "model": str|null} → [[float, ...], ...]
//
// Errors: LLMError (not configured, HTTP or network failure; the message
// says "(retryable)" when trying again may help), BudgetExceeded, ValueError.
func (s *LLMSession) Register(t Table) {
	t.Add("ask_llm", Typed(s.Ask))
	t.Add("embed", Typed(s.Embed))
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
		return nil, &Error{Type: LLMError, Message: llm.ErrNotConfigured.Error()}
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
	req := llm.EmbedRequest{Input: a.Texts}
	if a.Model != nil {
		req.Model = *a.Model
	}
	if _, err := s.reserve(); err != nil {
		return nil, err
	}
	resp, err := s.llm.Embed(ctx, req)
	if err != nil {
		var ce *llm.Error
		if errors.As(err, &ce) {
			return nil, fmt.Errorf("%w: %w", guestLLMError(ce), ce)
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

// guestLLMError is what the guest sees of a failed request: the status and
// the server's message, but not the host's network details.
func guestLLMError(e *llm.Error) *Error {
	msg := e.Message
	if e.StatusCode != 0 {
		msg = fmt.Sprintf("LLM server returned %d: %s", e.StatusCode, e.Message)
	}
	if e.Retryable {
		msg += " (retryable)"
	}
	return &Error{Type: LLMError, Message: msg}
}
