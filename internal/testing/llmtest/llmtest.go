// Package llmtest is a fake OpenAI-compatible chat-completions server for
// tests. It replays scripted replies in order and records what it received.
//
//	srv := llmtest.New(t, llmtest.Reply{Status: 429}, llmtest.Reply{Content: "hi"})
//	llm := llm.New(llm.Config{BaseURL: srv.URL()})
//	... // first call fails (retryable), second returns "hi"
//	require.Equal(t, "hello", srv.Requests()[1].Chat.Messages[0].Content)
//
// Usage is reported as word counts (strings.Fields) of the request messages
// and the reply, unless a Reply says otherwise.
//
// POST /v1/embeddings answers without a script: each input's embedding is
// Embedding(text), deterministic, and usage counts the inputs' words.
package llmtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Reply is one scripted response.
type Reply struct {
	// Content is the assistant message of a successful reply.
	Content string
	// Status, if neither 0 nor 200, makes the reply an error with this HTTP
	// status and an OpenAI error body carrying Error.
	Status int
	// Error is the error message (default: the status text).
	Error string
	// Body, if set, is sent verbatim instead of any generated body (with
	// Status, or 200).
	Body string
	// Model is the reported model (default: the requested one, or
	// "llmtest-model").
	Model string
	// Usage overrides the reported token counts.
	Usage *Usage
	// NoUsage leaves the usage object out of the response.
	NoUsage bool
	// Delay holds the reply back, or until the client gives up.
	Delay time.Duration
}

// Usage is the token counts a reply reports.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Message is one chat message of a request.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Chat is a decoded chat-completions request body.
type Chat struct {
	Model       string    `json:"model"`
	Messages    []Message `json:"messages"`
	Temperature *float64  `json:"temperature"`
	MaxTokens   *int      `json:"max_tokens"`
}

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
	Chat   Chat // zero if Body did not decode
}

// Server is a running fake. It is closed when the test ends.
type Server struct {
	srv *httptest.Server

	mu       sync.Mutex
	replies  []Reply
	requests []Request
}

// New starts a server that answers POST /v1/chat/completions with replies in
// order, then with 500 "llmtest: no scripted reply left".
func New(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	s := &Server{replies: replies}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the base URL to configure a client with, ending in "/v1".
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Enqueue appends replies to the script.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, replies...)
}

// Requests returns the requests received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Pending returns how many scripted replies are left.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.replies)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	_ = json.Unmarshal(body, &req.Chat)

	s.mu.Lock()
	s.requests = append(s.requests, req)
	if r.Method == http.MethodPost && r.URL.Path == "/v1/embeddings" {
		s.mu.Unlock()
		s.embeddings(w, body)
		return
	}
	served := r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions"
	var reply Reply
	ok := served && len(s.replies) > 0
	if ok {
		reply, s.replies = s.replies[0], s.replies[1:]
	}
	s.mu.Unlock()

	if !served {
		writeError(w, http.StatusNotFound, "llmtest: only POST /v1/chat/completions and /v1/embeddings are served")
		return
	}
	if !ok {
		writeError(w, http.StatusInternalServerError, "llmtest: no scripted reply left")
		return
	}
	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-r.Context().Done():
			return
		}
	}
	status := reply.Status
	if status == 0 {
		status = http.StatusOK
	}
	if reply.Body != "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, reply.Body)
		return
	}
	if status != http.StatusOK {
		msg := reply.Error
		if msg == "" {
			msg = http.StatusText(status)
		}
		writeError(w, status, msg)
		return
	}

	model := reply.Model
	if model == "" {
		model = req.Chat.Model
	}
	if model == "" {
		model = "llmtest-model"
	}
	resp := map[string]any{
		"id":      "chatcmpl-llmtest",
		"object":  "chat.completion",
		"created": 0,
		"model":   model,
		"choices": []map[string]any{{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": reply.Content},
			"finish_reason": "stop",
		}},
	}
	if !reply.NoUsage {
		u := reply.Usage
		if u == nil {
			u = &Usage{CompletionTokens: len(strings.Fields(reply.Content))}
			for _, m := range req.Chat.Messages {
				u.PromptTokens += len(strings.Fields(m.Content))
			}
			u.TotalTokens = u.PromptTokens + u.CompletionTokens
		}
		resp["usage"] = u
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

// EmbeddingDim is the length of the fake's embeddings.
const EmbeddingDim = 8

// Embedding is the fake's embedding of text: its bytes counted by value
// modulo EmbeddingDim, so equal texts embed equally, and different ones
// usually do not. It is not normalized.
func Embedding(text string) []float64 {
	v := make([]float64, EmbeddingDim)
	for _, b := range []byte(text) {
		v[int(b)%EmbeddingDim]++
	}
	return v
}

func (s *Server) embeddings(w http.ResponseWriter, body []byte) {
	var req struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	var inputs []string
	if json.Unmarshal(body, &req) != nil || json.Unmarshal(req.Input, &inputs) != nil {
		var one string
		if json.Unmarshal(req.Input, &one) != nil {
			writeError(w, http.StatusBadRequest, "llmtest: input must be a string or a list of strings")
			return
		}
		inputs = []string{one}
	}
	model := req.Model
	if model == "" {
		model = "llmtest-embed"
	}
	data, words := []map[string]any{}, 0
	for i, text := range inputs {
		data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": Embedding(text)})
		words += len(strings.Fields(text))
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "model": model, "data": data,
		"usage": map[string]any{"prompt_tokens": words, "total_tokens": words}})
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{"message": msg, "type": "llmtest_error", "code": status},
	})
}
