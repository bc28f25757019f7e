package service

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/wasmpy/wasmpy/provenance"
)

// reqInfo collects what the request log line says beyond method and path.
type reqInfo struct {
	status      int
	code        string
	executionID string
	skill       string
	outcome     string
	// owner is who the request acts for, for sessions: a fingerprint of
	// its token (never the token), or "" on a service without tokens.
	owner string
	// token is the request's token, or nil on a service without tokens.
	token *provenance.Token
}

type infoKey struct{}

func info(r *http.Request) *reqInfo {
	if ri, ok := r.Context().Value(infoKey{}).(*reqInfo); ok {
		return ri
	}
	return &reqInfo{}
}

type statusWriter struct {
	http.ResponseWriter
	ri *reqInfo
}

func (w *statusWriter) WriteHeader(code int) {
	if w.ri.status == 0 {
		w.ri.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (flushes and
// deadlines, for streams).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.ri.status == 0 {
		w.ri.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (s *Service) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ri := &reqInfo{}
		r = r.WithContext(context.WithValue(r.Context(), infoKey{}, ri))
		next.ServeHTTP(&statusWriter{ResponseWriter: w, ri: ri}, r)
		attrs := []any{"method", r.Method, "path", r.URL.Path, "status", ri.status,
			"duration_ms", float64(time.Since(start).Microseconds()) / 1000, "remote", r.RemoteAddr}
		for _, kv := range [][2]string{{"execution_id", ri.executionID}, {"skill", ri.skill}, {"outcome", ri.outcome}, {"code", ri.code}} {
			if kv[1] != "" {
				attrs = append(attrs, kv[0], kv[1])
			}
		}
		level := slog.LevelInfo
		if ri.status >= 500 {
			level = slog.LevelWarn
		}
		s.log.Log(r.Context(), level, "request", attrs...)
		s.metrics.request(ri.status)
	})
}

// recoverer turns a panic into a plain 500: the stack goes to the log,
// never to the client.
func (s *Service) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic serving request", "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				s.writeError(w, r, fail(CodeInternal, "internal error"))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// sameOrigin refuses a browser's cross-origin request that is not GET,
// HEAD or OPTIONS: one whose Sec-Fetch-Site is not same-origin or none, or
// whose Origin is not the Host it was sent to. A client that is not a
// browser sends neither header and passes. With a token-less service, this
// and application/json bodies are what keep a web page from running code.
func (s *Service) sameOrigin(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, fail(CodeCrossOrigin, "cross-origin request refused (Origin %q, Sec-Fetch-Site %q): call the API from the same origin or from a client that is not a browser",
			r.Header.Get("Origin"), r.Header.Get("Sec-Fetch-Site")))
	}))
	return cop.Handler(next)
}

// fallback answers what no route matched: 405 if the path exists for
// another method, else 404.
func (s *Service) fallback(mux *http.ServeMux, w http.ResponseWriter, r *http.Request) error {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		return fail(CodeMethodNotAllowed, "%s %s: use %s", r.Method, r.URL.Path, strings.Join(allow, " or "))
	}
	return fail(CodeNotFound, "no such endpoint: %s %s", r.Method, r.URL.Path)
}
