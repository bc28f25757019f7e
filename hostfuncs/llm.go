package hostfuncs

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// LLM defaults and bounds.
const (
	DefaultLLMTimeout       = 2 * time.Minute
	DefaultLLMMaxCalls      = 20
	DefaultLLMMaxTokens     = 100000
	DefaultLLMMaxPromptSize = 1 << 20
	DefaultLLMRetries       = 4
	DefaultLLMBackoff       = time.Second
	DefaultLLMMaxBackoff    = 30 * time.Second
	maxLLMResponseBytes     = 8 << 20

	// Below this many tokens left, ask_llm sends the remainder as max_tokens
	// even when the guest set none. Above it, it sends none (servers reject a
	// max_tokens beyond the model's output limit).
	budgetMaxTokensFloor = 4096
)

// ErrLLMNotConfigured is wrapped by the LLMCallError Chat returns when the
// LLMConfig has no BaseURL.
var ErrLLMNotConfigured = errors.New("no LLM configured for this sandbox")

// LLMConfig says where the OpenAI-compatible chat-completions server is. The
// zero value is "no LLM": every call fails with ErrLLMNotConfigured.
type LLMConfig struct {
	// BaseURL is the API root, e.g. "http://127.0.0.1:8080/v1"; requests go
	// to BaseURL + "/chat/completions".
	BaseURL string
	// Model is sent when a request names none; empty leaves it to the server
	// (codegen refuses to work without one: its cache is keyed by it).
	Model string
	// APIKey, if set, is sent as "Authorization: Bearer <APIKey>".
	APIKey string
	// Timeout bounds one request (0 = DefaultLLMTimeout); the caller's ctx
	// bounds it too.
	Timeout time.Duration
	// Retries is how often ask_llm retries a request that may pass next
	// time (429, 408, 5xx, a network error, a timeout) within the run's
	// deadline (0 = DefaultLLMRetries; negative = never). Backoff is the
	// delay before the first retry (0 = DefaultLLMBackoff), doubled for each
	// next one up to DefaultLLMMaxBackoff, with jitter.
	Retries int
	Backoff time.Duration
	// HTTPClient sends the requests (nil = a client with no timeout of its
	// own, relying on Timeout and ctx).
	HTTPClient *http.Client
}

// LLMConfigFromEnv reads WASMPY_LLM_BASE_URL, WASMPY_LLM_MODEL and
// WASMPY_LLM_API_KEY, falling back to OPENAI_BASE_URL, OPENAI_MODEL and
// OPENAI_API_KEY.
// Pass os.Getenv. There is no default base URL: an API key alone configures
// nothing, so a sandbox never spends money by accident.
func LLMConfigFromEnv(getenv func(string) string) LLMConfig {
	first := func(keys ...string) string {
		for _, k := range keys {
			if v := strings.TrimSpace(getenv(k)); v != "" {
				return v
			}
		}
		return ""
	}
	return LLMConfig{
		BaseURL: first("WASMPY_LLM_BASE_URL", "OPENAI_BASE_URL"),
		Model:   first("WASMPY_LLM_MODEL", "OPENAI_MODEL"),
		APIKey:  first("WASMPY_LLM_API_KEY", "OPENAI_API_KEY"),
	}
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"` // "system", "user" or "assistant"
	Content string `json:"content"`
}

// ChatRequest is one chat completion to ask for.
type ChatRequest struct {
	Messages    []Message
	Model       string   // "" = LLMConfig.Model
	Temperature *float64 // nil = server default
	MaxTokens   int      // 0 = server default
}

// Usage counts tokens as the server reports them.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// ChatResponse is the first choice of a chat completion.
type ChatResponse struct {
	Content      string
	Model        string // as the server reports it
	FinishReason string
	Usage        Usage
}

// LLMCallError is a failed chat completion. (The name LLMError is the
// guest's exception class.)
type LLMCallError struct {
	StatusCode int    // HTTP status; 0 when no response arrived
	Message    string // the server's error message when it sent one
	Retryable  bool   // 429, 408, 5xx, network errors and timeouts
	Err        error  // the underlying error, if any
}

func (e *LLMCallError) Error() string {
	var b strings.Builder
	b.WriteString("wasmpy: llm: ")
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, "status %d: ", e.StatusCode)
	}
	b.WriteString(e.Message)
	if e.Err != nil && e.Err.Error() != e.Message {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *LLMCallError) Unwrap() error { return e.Err }

// guestError is what the guest sees: the status and the server's message,
// but not the host's network details.
func (e *LLMCallError) guestError() *Error {
	msg := e.Message
	if e.StatusCode != 0 {
		msg = fmt.Sprintf("LLM server returned %d: %s", e.StatusCode, e.Message)
	}
	if e.Retryable {
		msg += " (retryable)"
	}
	return &Error{Type: LLMError, Message: msg}
}

// LLM is an OpenAI-compatible chat-completions client. It holds no per-run
// state and is safe for concurrent use; per-run budgets live in LLMSession.
type LLM struct {
	cfg    LLMConfig
	client *http.Client
}

// NewLLM returns a client for cfg. It never fails: an unusable cfg shows up
// as an LLMCallError on the first Chat.
func NewLLM(cfg LLMConfig) *LLM {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultLLMTimeout
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	switch {
	case cfg.Retries == 0:
		cfg.Retries = DefaultLLMRetries
	case cfg.Retries < 0:
		cfg.Retries = 0
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultLLMBackoff
	}
	cfg.BaseURL = strings.TrimRight(strings.TrimSpace(cfg.BaseURL), "/")
	return &LLM{cfg: cfg, client: client}
}

// Configured reports whether the client has a server to talk to.
func (c *LLM) Configured() bool { return c.cfg.BaseURL != "" }

// BaseURL is the server's API root ("" when not configured); with Model, it
// is what a cache of replies keys on.
func (c *LLM) BaseURL() string { return c.cfg.BaseURL }

// Model is the model sent when a request names none ("" = the server's).
func (c *LLM) Model() string { return c.cfg.Model }

// Chat sends one chat completion request and returns the first choice.
// Failures are *LLMCallError; check Retryable before trying again.
func (c *LLM) Chat(ctx context.Context, req ChatRequest) (*ChatResponse, error) {
	wire := struct {
		Model       string    `json:"model,omitempty"`
		Messages    []Message `json:"messages"`
		Temperature *float64  `json:"temperature,omitempty"`
		MaxTokens   int       `json:"max_tokens,omitempty"`
	}{req.Model, req.Messages, req.Temperature, req.MaxTokens}
	if wire.Model == "" {
		wire.Model = c.cfg.Model
	}
	if wire.Messages == nil {
		wire.Messages = []Message{}
	}
	data, status, err := c.post(ctx, "/chat/completions", wire)
	if err != nil {
		return nil, err
	}
	var out struct {
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content *string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage Usage `json:"usage"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, &LLMCallError{StatusCode: status, Message: "malformed response: not chat-completion JSON", Err: err}
	}
	if len(out.Choices) == 0 {
		return nil, &LLMCallError{StatusCode: status, Message: serverMessage(0, data)}
	}
	ch := out.Choices[0]
	r := &ChatResponse{Model: out.Model, FinishReason: ch.FinishReason, Usage: out.Usage}
	if ch.Message.Content != nil {
		r.Content = *ch.Message.Content
	}
	if r.Usage.TotalTokens == 0 {
		r.Usage.TotalTokens = r.Usage.PromptTokens + r.Usage.CompletionTokens
	}
	return r, nil
}

// transportError classifies a failure to get a response.
func transportError(ctx context.Context, err error) *LLMCallError {
	switch {
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return &LLMCallError{Message: "LLM request canceled", Err: err}
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return &LLMCallError{Message: "LLM request timed out", Retryable: true, Err: err}
	default:
		return &LLMCallError{Message: "LLM request failed (network error: " + networkCause(err) + ")", Retryable: true, Err: err}
	}
}

// networkCause names why a request got no response, in words that tell the
// guest what went wrong without the host's addresses.
func networkCause(err error) string {
	var dns *net.DNSError
	var errno syscall.Errno
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var cert *tls.CertificateVerificationError
	switch {
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "the server's host name is unknown"
		}
		return "the server's host name could not be resolved"
	case errors.As(err, &errno):
		return errno.Error() // "connection refused", "connection reset by peer"
	case errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &cert):
		return "the server's TLS certificate is not trusted"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the server closed the connection"
	}
	return "no response from the server"
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// serverMessage extracts the message of an OpenAI error body
// ({"error": {"message": ...}} or {"error": "..."}), else a short excerpt.
func serverMessage(code int, body []byte) string {
	var e struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &e) == nil {
		var obj struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(e.Error, &obj) == nil && obj.Message != "":
			return obj.Message
		case json.Unmarshal(e.Error, &s) == nil && s != "":
			return s
		case e.Message != "":
			return e.Message
		}
	}
	if text := strings.TrimSpace(TruncateUTF8(body, 200)); text != "" && utf8.ValidString(text) {
		if code == 0 {
			return "unexpected response: " + text
		}
		return text
	}
	if code == 0 {
		return "response had no choices"
	}
	return http.StatusText(code)
}

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
	llm    *LLM
	budget LLMBudget

	mu    sync.Mutex
	usage LLMUsage
}

// Session starts a run's use of c under budget.
func (c *LLM) Session(budget LLMBudget) *LLMSession {
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

// Register adds ask_llm to t under a new session with budget, and returns
// the session so the caller can read its usage after the run.
func (c *LLM) Register(t Table, budget LLMBudget) *LLMSession {
	s := c.Session(budget)
	s.Register(t)
	return s
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
// arguments, BudgetExceeded, or LLMError (the LLMCallError is in the chain).
//
// A request that may pass next time (429, 5xx, a network error) is retried
// with backoff (LLMConfig.Retries), but only while the run's deadline leaves
// time for the wait. Every request sent counts as a call, retries and
// failures too. Tokens are
// counted from the server's usage report, estimated at 4 bytes per token
// when it sends none. max_tokens is lowered to what the budget has left (and
// set to it when fewer than 4096 tokens are left), so one reply can overshoot
// MaxTokens only when the guest sets no max_tokens and the budget has plenty
// left.
func (s *LLMSession) Ask(ctx context.Context, a AskArgs) (string, error) {
	if !s.llm.Configured() {
		return "", &Error{Type: LLMError, Message: ErrLLMNotConfigured.Error()}
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
	req := ChatRequest{Temperature: a.Temperature}
	promptBytes := len(a.Prompt)
	if a.System != nil && *a.System != "" {
		req.Messages = append(req.Messages, Message{Role: "system", Content: *a.System})
		promptBytes += len(*a.System)
	}
	req.Messages = append(req.Messages, Message{Role: "user", Content: a.Prompt})
	if a.Model != nil {
		req.Model = *a.Model
	}
	if promptBytes > s.budget.MaxPromptBytes {
		return "", Errorf(BudgetError, "prompt too large: %d bytes, the limit is %d", promptBytes, s.budget.MaxPromptBytes)
	}

	policy := RetryPolicy{Retries: s.llm.cfg.Retries, Backoff: s.llm.cfg.Backoff}
	var resp *ChatResponse
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
		var ce *LLMCallError
		if !errors.As(err, &ce) {
			return "", err
		}
		delay, ok := nextRetry(ctx, policy, retry, err)
		if !ok || sleep(ctx, delay) != nil {
			return "", fmt.Errorf("%w: %w", ce.guestError(), ce)
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

// post sends wire as JSON to the server's path and returns a 2xx answer's
// body and status; anything else is an *LLMCallError, as Chat and Embed
// return them.
func (c *LLM) post(ctx context.Context, path string, wire any) ([]byte, int, error) {
	if c.cfg.BaseURL == "" {
		return nil, 0, &LLMCallError{Message: ErrLLMNotConfigured.Error(), Err: ErrLLMNotConfigured}
	}
	body, err := json.Marshal(wire)
	if err != nil {
		return nil, 0, &LLMCallError{Message: "encoding the request failed", Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		return nil, 0, &LLMCallError{Message: "bad LLM base URL", Err: err}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if c.cfg.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	resp, err := c.client.Do(hreq)
	if err != nil {
		return nil, 0, transportError(ctx, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxLLMResponseBytes+1))
	if err != nil {
		return nil, 0, transportError(ctx, err)
	}
	code := resp.StatusCode
	if len(data) > maxLLMResponseBytes {
		return nil, 0, &LLMCallError{StatusCode: code, Message: fmt.Sprintf("response larger than %d bytes", maxLLMResponseBytes)}
	}
	if code/100 != 2 {
		return nil, 0, &LLMCallError{StatusCode: code, Message: serverMessage(code, data),
			Retryable: code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500}
	}
	return data, code, nil
}
