// Package llm is wasmpy's client for an OpenAI-compatible server (OpenAI,
// Ollama, vLLM, llama.cpp): chat completions and embeddings, with retries of
// the failures that may pass next time. It knows nothing of sandboxes: the
// guest's ask_llm and embed (hostfuncs.LLMSession) and the code generator
// (codegen) both call it, each under its own budget.
//
//	c := llm.New(llm.ConfigFromEnv(os.Getenv))
//	resp, err := c.Chat(ctx, llm.ChatRequest{Messages: []llm.Message{{Role: "user", Content: "2+2?"}}})
package llm

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
	"syscall"
	"time"
	"unicode/utf8"
)

// Client defaults and bounds.
const (
	DefaultTimeout    = 2 * time.Minute
	DefaultRetries    = 4
	DefaultBackoff    = time.Second
	DefaultMaxBackoff = 30 * time.Second
	maxResponseBytes  = 8 << 20
)

// ErrNotConfigured is wrapped by the Error Chat returns when the
// Config has no BaseURL.
var ErrNotConfigured = errors.New("no LLM configured for this sandbox")

// Config says where the OpenAI-compatible chat-completions server is. The
// zero value is "no LLM": every call fails with ErrNotConfigured.
type Config struct {
	// BaseURL is the API root, e.g. "http://127.0.0.1:8080/v1"; requests go
	// to BaseURL + "/chat/completions".
	BaseURL string
	// Model is sent when a request names none; empty leaves it to the server
	// (codegen refuses to work without one: its cache is keyed by it).
	Model string
	// APIKey, if set, is sent as "Authorization: Bearer <APIKey>".
	APIKey string
	// Timeout bounds one request (0 = DefaultTimeout); the caller's ctx
	// bounds it too.
	Timeout time.Duration
	// Retries is how often ask_llm retries a request that may pass next
	// time (429, 408, 5xx, a network error, a timeout) within the run's
	// deadline (0 = DefaultRetries; negative = never). Backoff is the
	// delay before the first retry (0 = DefaultBackoff), doubled for each
	// next one up to DefaultMaxBackoff, with jitter.
	Retries int
	Backoff time.Duration
	// HTTPClient sends the requests (nil = a client with no timeout of its
	// own, relying on Timeout and ctx).
	HTTPClient *http.Client
}

// ConfigFromEnv reads WASMPY_LLM_BASE_URL, WASMPY_LLM_MODEL and
// WASMPY_LLM_API_KEY, falling back to OPENAI_BASE_URL, OPENAI_MODEL and
// OPENAI_API_KEY.
// Pass os.Getenv. There is no default base URL: an API key alone configures
// nothing, so a sandbox never spends money by accident.
func ConfigFromEnv(getenv func(string) string) Config {
	first := func(keys ...string) string {
		for _, k := range keys {
			if v := strings.TrimSpace(getenv(k)); v != "" {
				return v
			}
		}
		return ""
	}
	return Config{
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
	Model       string   // "" = Config.Model
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

// Error is a failed chat completion. (The name LLMError is the
// guest's exception class.)
type Error struct {
	StatusCode int    // HTTP status; 0 when no response arrived
	Message    string // the server's error message when it sent one
	Retryable  bool   // 429, 408, 5xx, network errors and timeouts
	Err        error  // the underlying error, if any
}

func (e *Error) Error() string {
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

func (e *Error) Unwrap() error { return e.Err }

// Client is an OpenAI-compatible chat-completions and embeddings client. It
// holds no per-run state and is safe for concurrent use; a run's budget is
// its caller's (hostfuncs.LLMSession for the guest's ask_llm and embed).
type Client struct {
	cfg    Config
	client *http.Client
}

// New returns a client for cfg. It never fails: an unusable cfg shows up
// as an Error on the first Chat.
func New(cfg Config) *Client {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	switch {
	case cfg.Retries == 0:
		cfg.Retries = DefaultRetries
	case cfg.Retries < 0:
		cfg.Retries = 0
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultBackoff
	}
	cfg.BaseURL = strings.TrimRight(strings.TrimSpace(cfg.BaseURL), "/")
	return &Client{cfg: cfg, client: client}
}

// Configured reports whether the client has a server to talk to.
func (c *Client) Configured() bool { return c.cfg.BaseURL != "" }

// BaseURL is the server's API root ("" when not configured); with Model, it
// is what a cache of replies keys on.
func (c *Client) BaseURL() string { return c.cfg.BaseURL }

// Model is the model sent when a request names none ("" = the server's).
func (c *Client) Model() string { return c.cfg.Model }

// RetryPolicy is the retries Config asked for (with the defaults filled in),
// for a caller that retries Chat itself, as ask_llm does to count each
// request against its budget.
func (c *Client) RetryPolicy() RetryPolicy {
	return RetryPolicy{Retries: c.cfg.Retries, Backoff: c.cfg.Backoff}
}

// Chat sends one chat completion request and returns the first choice.
// Failures are *Error; check Retryable before trying again, or use ChatRetry.
func (c *Client) Chat(ctx context.Context, req ChatRequest) (*ChatResponse, error) {
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
		return nil, &Error{StatusCode: status, Message: "malformed response: not chat-completion JSON", Err: err}
	}
	if len(out.Choices) == 0 {
		return nil, &Error{StatusCode: status, Message: serverMessage(0, data)}
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
func transportError(ctx context.Context, err error) *Error {
	switch {
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return &Error{Message: "LLM request canceled", Err: err}
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return &Error{Message: "LLM request timed out", Retryable: true, Err: err}
	default:
		return &Error{Message: "LLM request failed (network error: " + networkCause(err) + ")", Retryable: true, Err: err}
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
	if text := strings.TrimSpace(head(body, 200)); text != "" && utf8.ValidString(text) {
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

// post sends wire as JSON to the server's path and returns a 2xx answer's
// body and status; anything else is an *Error, as Chat and Embed
// return them.
func (c *Client) post(ctx context.Context, path string, wire any) ([]byte, int, error) {
	if c.cfg.BaseURL == "" {
		return nil, 0, &Error{Message: ErrNotConfigured.Error(), Err: ErrNotConfigured}
	}
	body, err := json.Marshal(wire)
	if err != nil {
		return nil, 0, &Error{Message: "encoding the request failed", Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		return nil, 0, &Error{Message: "bad LLM base URL", Err: err}
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
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, 0, transportError(ctx, err)
	}
	code := resp.StatusCode
	if len(data) > maxResponseBytes {
		return nil, 0, &Error{StatusCode: code, Message: fmt.Sprintf("response larger than %d bytes", maxResponseBytes)}
	}
	if code/100 != 2 {
		return nil, 0, &Error{StatusCode: code, Message: serverMessage(code, data),
			Retryable: code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500}
	}
	return data, code, nil
}

// head returns b as a string of at most n bytes, cut at a rune boundary.
func head(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n])
}
