package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/internal/jsontext"
)

// maxBodyDepth bounds the nesting of a request body, far above what any
// request needs and far below encoding/json's own limit (10000).
const maxBodyDepth = 512

// executeBody is POST /skills/{name}/execute's body.
type executeBody struct {
	Args      json.RawMessage `json:"args"`
	ActorID   string          `json:"actor_id"`
	ActorType string          `json:"actor_type"`
	Approved  bool            `json:"approved"`
}

// execBody is POST /exec's body.
type execBody struct {
	Code      string     `json:"code"`
	Args      []string   `json:"args"`
	Stdin     string     `json:"stdin"`
	Limits    execLimits `json:"limits"`
	ActorID   string     `json:"actor_id"`
	ActorType string     `json:"actor_type"`
}

// execLimits are the limits a POST /exec body asks for; 0 means the default.
type execLimits struct {
	TimeoutMS   int64  `json:"timeout_ms"`
	MemoryBytes uint64 `json:"memory_bytes"`
	Fuel        uint64 `json:"fuel"`
}

// decodeBody reads a JSON object into v, strictly: the body must be
// application/json (else 415), at most MaxBodyBytes (else 413), UTF-8 with
// no unpaired surrogate escape, nested at most maxBodyDepth, one object with
// only the fields v has (else 400). encoding/json would quietly turn a lone
// "\ud800" into U+FFFD here, and a handler would get it raw from Python.
func (s *Service) decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	ct := r.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	if cs, ok := params["charset"]; err != nil || mt != "application/json" || ok && !strings.EqualFold(cs, "utf-8") {
		s.fail(w, r, CodeUnsupportedMediaType, fmt.Sprintf("the request body must be JSON sent as Content-Type: application/json, not %q", ct))
		return false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		s.fail(w, r, CodeBodyTooLarge, fmt.Sprintf("the request body is larger than %d bytes", tooBig.Limit))
		return false
	case err != nil:
		s.fail(w, r, CodeBadRequest, "reading the request body: "+err.Error())
		return false
	}
	if err := jsontext.Check(body, jsontext.Limits{Depth: maxBodyDepth}); err != nil {
		s.fail(w, r, CodeBadRequest, "the request body: "+err.Error())
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		s.fail(w, r, CodeBadRequest, "the request body is not the JSON object expected: "+err.Error())
		return false
	}
	if dec.More() {
		s.fail(w, r, CodeBadRequest, "the request body has data after its JSON object")
		return false
	}
	return true
}

// limits are the limits a POST /exec run gets: Config.ExecLimits, with what
// the request asks for within them (or within wasmpy's own bounds where
// ExecLimits sets none). The error names the field and its range.
func (s *Service) limits(req execLimits) (wasmpy.Limits, error) {
	ceil := s.cfg.ExecLimits
	lim := ceil
	maxMS := int64(math.MaxInt64 / int64(time.Millisecond))
	if ceil.Timeout != 0 {
		maxMS = max(1, ceil.Timeout.Milliseconds())
	}
	maxMemory, maxFuel := uint64(wasmpy.MaxMemory), uint64(wasmpy.MaxFuel)
	if ceil.Memory != 0 {
		maxMemory = ceil.Memory
	}
	if ceil.Fuel != 0 {
		maxFuel = ceil.Fuel
	}
	if ms := req.TimeoutMS; ms != 0 {
		if ms < 0 || ms > maxMS {
			return lim, fmt.Errorf("limits.timeout_ms: want 1 to %d (or 0 for the default), got %d", maxMS, ms)
		}
		lim.Timeout = time.Duration(ms) * time.Millisecond
	}
	if m := req.MemoryBytes; m != 0 {
		if m > maxMemory {
			return lim, fmt.Errorf("limits.memory_bytes: want 1 to %d (or 0 for the default), got %d", maxMemory, m)
		}
		lim.Memory = m
	}
	if f := req.Fuel; f != 0 {
		if f > maxFuel {
			return lim, fmt.Errorf("limits.fuel: want 1 to %d (or 0 for the default), got %d", maxFuel, f)
		}
		lim.Fuel = f
	}
	return lim, nil
}
