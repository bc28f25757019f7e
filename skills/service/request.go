package service

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// decodeBody reads a JSON object into v, strictly, answering 413 or 400.
func (s *Service) decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
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
