package service

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/skills"
)

// The service's own error codes, beside skills' (invalid_input,
// approval_required, invalid_output, run_failed, timeout; bad_request is
// both's).
const (
	CodeBadRequest           = skills.CodeBadRequest
	CodeUnauthorized         = "unauthorized"
	CodeCrossOrigin          = "cross_origin"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeNotFound             = "not_found"
	CodeUnknownSkill         = "unknown_skill"
	CodeUnknownExecution     = "unknown_execution"
	CodeExecDisabled         = "exec_disabled"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeBodyTooLarge         = "body_too_large"
	CodeBusy                 = "busy"
	CodeInternal             = "internal"
	CodeCanceled             = "canceled"
	CodeLoading              = "loading"
)

// statusOf maps every code to its HTTP status.
var statusOf = map[string]int{
	CodeBadRequest:              http.StatusBadRequest,
	CodeUnauthorized:            http.StatusUnauthorized,
	skills.CodeApprovalRequired: http.StatusForbidden,
	CodeCrossOrigin:             http.StatusForbidden,
	CodeNotFound:                http.StatusNotFound,
	CodeUnknownSkill:            http.StatusNotFound,
	CodeUnknownExecution:        http.StatusNotFound,
	CodeExecDisabled:            http.StatusNotFound,
	CodeMethodNotAllowed:        http.StatusMethodNotAllowed,
	CodeBodyTooLarge:            http.StatusRequestEntityTooLarge,
	CodeUnsupportedMediaType:    http.StatusUnsupportedMediaType,
	skills.CodeInvalidInput:     http.StatusUnprocessableEntity,
	CodeBusy:                    http.StatusTooManyRequests,
	CodeInternal:                http.StatusInternalServerError,
	skills.CodeInvalidOutput:    http.StatusBadGateway,
	skills.CodeRunFailed:        http.StatusBadGateway,
	skills.CodeTimeout:          http.StatusGatewayTimeout,
	CodeCanceled:                http.StatusServiceUnavailable,
	CodeLoading:                 http.StatusServiceUnavailable,
}

// errorBody is every error response: {"error": {...}}, maybe with the run.
type errorBody struct {
	Error      *skills.Error  `json:"error"`
	Result     *wasmpy.Result `json:"result,omitempty"`
	Provenance *skills.Record `json:"provenance,omitempty"`
}

func (s *Service) writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"internal error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func (s *Service) failWith(w http.ResponseWriter, r *http.Request, body errorBody) {
	info(r).code = body.Error.Code
	status, ok := statusOf[body.Error.Code]
	if !ok {
		status = http.StatusInternalServerError
	}
	if body.Error.Code == CodeBusy || body.Error.Code == CodeLoading {
		w.Header().Set("Retry-After", "1")
	}
	s.writeJSON(w, status, body)
}

func (s *Service) fail(w http.ResponseWriter, r *http.Request, code, msg string) {
	s.failWith(w, r, errorBody{Error: &skills.Error{Code: code, Message: msg}})
}

// internal answers 500 for the host's own failure, logging the cause.
func (s *Service) internal(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Error("internal error", "path", r.URL.Path, "err", err.Error())
	s.fail(w, r, CodeInternal, "internal error")
}

// refused answers a request the executor turned down before running.
func (s *Service) refused(w http.ResponseWriter, r *http.Request, err error) {
	var se *skills.Error
	if errors.As(err, &se) {
		if se.Code == skills.CodeApprovalRequired {
			hinted := *se
			hinted.Message += `: send "approved": true`
			se = &hinted
		}
		s.failWith(w, r, errorBody{Error: se})
		return
	}
	s.internal(w, r, err)
}
