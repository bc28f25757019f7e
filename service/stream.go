package service

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// wantsStream reports whether a request asks for its run's output as
// server-sent events (Accept: text/event-stream).
func wantsStream(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// eventStream answers a request with server-sent events: "stdout" and
// "stderr" events carry the run's output as it is written (data: a JSON
// string), and the response the request would have had without streaming
// comes last, as one "result" event (status 200) or "error" event (data:
// {"status": the HTTP status, "body": the error body}). The HTTP status
// itself is 200 once the first event is out.
type eventStream struct {
	w       http.ResponseWriter
	header  http.Header // the final response's, not sent
	mu      sync.Mutex
	started bool
	status  int
}

func newEventStream(w http.ResponseWriter) *eventStream {
	return &eventStream{w: w, header: http.Header{}, status: http.StatusOK}
}

func (e *eventStream) Header() http.Header { return e.header }

func (e *eventStream) WriteHeader(status int) { e.status = status }

// Write takes the final response body: the last event.
func (e *eventStream) Write(body []byte) (int, error) {
	body = []byte(strings.TrimSpace(string(body)))
	if e.status == http.StatusOK {
		return len(body), e.event("result", body)
	}
	data, _ := json.Marshal(map[string]any{"status": e.status, "body": json.RawMessage(body)})
	return len(body), e.event("error", data)
}

// stream is a writer whose writes become events named name.
func (e *eventStream) stream(name string) io.Writer { return streamWriter{e, name} }

type streamWriter struct {
	e    *eventStream
	name string
}

func (s streamWriter) Write(p []byte) (int, error) {
	data, _ := json.Marshal(string(p))
	if err := s.e.event(s.name, data); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (e *eventStream) event(name string, data []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.started {
		e.started = true
		h := e.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		e.w.WriteHeader(http.StatusOK)
	}
	if _, err := fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", name, data); err != nil {
		return err
	}
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}
