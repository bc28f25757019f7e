package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/wasmpy/wasmpy/internal/jsontext"
	"github.com/wasmpy/wasmpy/runs"
)

// maxBodyDepth bounds the nesting of a request body, far above what any
// request needs and far below encoding/json's own limit (10000).
const maxBodyDepth = 512

// executeBody is POST /skills/{name}/execute's body.
type executeBody struct {
	Version   string          `json:"version,omitempty"` // a registered version; "" for the newest enabled
	Args      json.RawMessage `json:"args"`
	ActorID   string          `json:"actor_id"`
	ActorType string          `json:"actor_type"`
	Approved  bool            `json:"approved"`
	Tier      string          `json:"tier,omitempty"` // a tier stricter than the skill's own; default: its own
}

// execBody is POST /exec's body.
type execBody struct {
	Code      string               `json:"code"`
	Args      []string             `json:"args"`
	Stdin     string               `json:"stdin"`
	Limits    runs.RequestedLimits `json:"limits"`
	ActorID   string               `json:"actor_id"`
	ActorType string               `json:"actor_type"`
	Tier      string               `json:"tier,omitempty"` // the trust tier; default: the service's (a session turn: the session's)
}

// sessionBody is POST /sessions's body, which may be absent.
type sessionBody struct {
	Tier string `json:"tier,omitempty"` // the trust tier of the session's turns; default: the service's
}

// decodeBody reads a JSON object into v, strictly: the body must be
// application/json (else 415), at most MaxBodyBytes (else 413), UTF-8 with
// no unpaired surrogate escape, nested at most maxBodyDepth, one object with
// only the fields v has (else 400). encoding/json would quietly turn a lone
// "\ud800" into U+FFFD here, and a handler would get it raw from Python.
func (s *Service) decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	return s.decodeJSON(w, r, v, true)
}

// decodeLenient is decodeBody for the classic routes, which ignore the
// fields v does not have, as the classic service (pydantic's default) does.
func (s *Service) decodeLenient(w http.ResponseWriter, r *http.Request, v any) error {
	return s.decodeJSON(w, r, v, false)
}

func (s *Service) decodeJSON(w http.ResponseWriter, r *http.Request, v any, strict bool) error {
	ct := r.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	if cs, ok := params["charset"]; err != nil || mt != "application/json" || ok && !strings.EqualFold(cs, "utf-8") {
		return fail(CodeUnsupportedMediaType, "the request body must be JSON sent as Content-Type: application/json, not %q", ct)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return fail(CodeBodyTooLarge, "the request body is larger than %d bytes", tooBig.Limit)
	case err != nil:
		return fail(CodeBadRequest, "reading the request body: %v", err)
	}
	if err := jsontext.Check(body, jsontext.Limits{Depth: maxBodyDepth}); err != nil {
		return fail(CodeBadRequest, "the request body: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return fail(CodeBadRequest, "the request body is not the JSON object expected: %v", err)
	}
	if dec.More() {
		return fail(CodeBadRequest, "the request body has data after its JSON object")
	}
	return nil
}
