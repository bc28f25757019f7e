package service

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/runs"
)

// CodeForbidden is the code of a request whose token lacks the role it
// needs (403).
const CodeForbidden = "forbidden"

// staticToken is one of Config.Tokens: a runner with no maximum tier (the
// operator's own, as before tiers; tokens handed out with a maximum are the
// store's).
type staticToken struct {
	sum   [32]byte
	token *provenance.Token
}

// setupAuth reads the static tokens and decides whether the service asks
// for tokens at all: when it has static ones or the store holds any.
func (s *Service) setupAuth(cfg Config) error {
	for _, t := range cfg.Tokens {
		if t = strings.TrimSpace(t); t != "" {
			sum := sha256.Sum256([]byte(t))
			s.static = append(s.static, staticToken{sum: sum, token: &provenance.Token{
				Name: "static:" + hex.EncodeToString(sum[:4]), Role: provenance.RoleRunner}})
		}
	}
	s.auth = len(s.static) > 0
	if cfg.TokenStore != nil && !s.auth {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		all, err := cfg.TokenStore.ListTokens(ctx)
		if err != nil {
			return fmt.Errorf("service: reading the tokens: %w", err)
		}
		s.auth = len(all) > 0
	}
	return nil
}

// AsksForTokens reports whether requests need a token (Config.TokenStore).
func (s *Service) AsksForTokens() bool { return s.auth }

// authorized requires a valid bearer token on every endpoint but /health,
// /health/live and /health/ready, when the service asks for tokens, and notes the token
// on the request (tokenOf).
func (s *Service) authorized(next http.Handler) http.Handler {
	if !s.auth {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" || r.URL.Path == "/health/live" || r.URL.Path == "/health/ready" {
			next.ServeHTTP(w, r)
			return
		}
		auth := r.Header.Get("Authorization")
		secret, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok {
			secret, ok = strings.CutPrefix(auth, "bearer ")
		}
		sum := sha256.Sum256([]byte(strings.TrimSpace(secret)))
		var tok *provenance.Token
		var err error
		if ok {
			tok, err = s.lookupToken(r.Context(), sum)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if tok == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="wasmpy"`)
			s.writeError(w, r, fail(CodeUnauthorized, "a valid bearer token is required (Authorization: Bearer TOKEN)"))
			return
		}
		ri := info(r)
		ri.owner, ri.token = "token:"+hex.EncodeToString(sum[:8]), tok
		// Other front ends behind this one (MCP at /mcp) learn the caller
		// from the context.
		next.ServeHTTP(w, r.WithContext(runs.WithCaller(r.Context(), caller(r))))
	})
}

// lookupToken finds the token whose SHA-256 is sum: a static one
// (compared with each, in constant time), else one in the store; nil if
// none.
func (s *Service) lookupToken(ctx context.Context, sum [32]byte) (*provenance.Token, error) {
	var found *provenance.Token
	for _, t := range s.static {
		if subtle.ConstantTimeCompare(sum[:], t.sum[:]) == 1 {
			found = t.token
		}
	}
	if found != nil || s.cfg.TokenStore == nil {
		return found, nil
	}
	tok, err := s.cfg.TokenStore.TokenByHash(ctx, hex.EncodeToString(sum[:]))
	if errors.Is(err, provenance.ErrNotFound) {
		return nil, nil
	}
	return tok, err
}

// tokenOf is the token a request came with, or nil on a service that asks
// for none.
func tokenOf(r *http.Request) *provenance.Token { return info(r).token }

// admin returns the request's token if it is an admin's, else why not: a
// runner's token is forbidden, and so is every request to a service that
// asks for no token (it has no admin).
func admin(r *http.Request) (*provenance.Token, error) {
	switch t := tokenOf(r); {
	case t == nil:
		return nil, fail(CodeForbidden, "changing the registered skills needs an admin token, and this service asks for none: create a token with role admin and restart it")
	case !t.Admin():
		return nil, fail(CodeForbidden, "token %q has role %s: changing the registered skills needs role admin", t.Name, t.Role)
	default:
		return t, nil
	}
}
