package service

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A panic in a handler is a plain JSON 500: the stack goes to the log only.
func TestPanicIsAPlain500(t *testing.T) {
	var logs strings.Builder
	s := &Service{log: slog.New(slog.NewJSONHandler(&logs, nil)), metrics: newMetrics()}
	h := s.recoverer(s.logged(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("kaboom") })))
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/skills")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, 500, resp.StatusCode)
	require.JSONEq(t, `{"error": {"code": "internal", "message": "internal error"}}`, string(body))
	require.Contains(t, logs.String(), "kaboom")
	require.Contains(t, logs.String(), "goroutine", "the stack is logged")
}
