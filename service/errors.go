package service

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/skills"
)

// The service's own error codes, beside skills' (invalid_input,
// approval_required, invalid_output, run_failed, timeout; bad_request, busy
// and canceled are both's).
const (
	CodeBadRequest           = runs.CodeBadRequest
	CodeUnauthorized         = "unauthorized"
	CodeCrossOrigin          = "cross_origin"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeNotFound             = "not_found"
	CodeUnknownSkill         = skills.CodeUnknownSkill
	CodeUnknownExecution     = "unknown_execution"
	CodeExecDisabled         = "exec_disabled"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeBodyTooLarge         = "body_too_large"
	CodeBusy                 = runs.CodeBusy
	CodeInternal             = "internal"
	CodeCanceled             = runs.CodeCanceled
	CodeLoading              = "loading"
	CodeNotReady             = "not_ready" // GET /health/ready: draining, the store unreachable, or skills loading
)

// statusOf maps every code to its HTTP status.
var statusOf = map[string]int{
	CodeBadRequest:            http.StatusBadRequest,
	CodeUnauthorized:          http.StatusUnauthorized,
	runs.CodeApprovalRequired: http.StatusForbidden,
	CodeCrossOrigin:           http.StatusForbidden,
	CodeForbidden:             http.StatusForbidden,
	CodeTierForbidden:         http.StatusForbidden,
	CodeNotFound:              http.StatusNotFound,
	CodeUnknownSkill:          http.StatusNotFound,
	skills.CodeInvalidSkill:   http.StatusUnprocessableEntity,
	skills.CodeSkillExists:    http.StatusConflict,
	skills.CodeSkillDisabled:  http.StatusConflict,
	skills.CodeNotRegistered:  http.StatusConflict,
	skills.CodeNoRegistration: http.StatusNotImplemented,
	CodeUnknownExecution:      http.StatusNotFound,
	CodeUnknownSession:        http.StatusNotFound,
	CodeSessionConflict:       http.StatusConflict,
	CodeTooManySessions:       http.StatusTooManyRequests,
	runs.CodeBudgetExceeded:   http.StatusTooManyRequests,
	CodeExecDisabled:          http.StatusNotFound,
	CodeNoLLM:                 http.StatusNotImplemented,
	CodeMethodNotAllowed:      http.StatusMethodNotAllowed,
	CodeBodyTooLarge:          http.StatusRequestEntityTooLarge,
	CodeUnsupportedMediaType:  http.StatusUnsupportedMediaType,
	runs.CodeInvalidInput:     http.StatusUnprocessableEntity,
	CodeBusy:                  http.StatusTooManyRequests,
	CodeInternal:              http.StatusInternalServerError,
	runs.CodeInvalidOutput:    http.StatusBadGateway,
	runs.CodeRunFailed:        http.StatusBadGateway,
	runs.CodeTimeout:          http.StatusGatewayTimeout,
	CodeCanceled:              http.StatusServiceUnavailable,
	CodeLoading:               http.StatusServiceUnavailable,
	CodeNotReady:              http.StatusServiceUnavailable,
}

// errorBody is an error response without a run: {"error": {...}}.
type errorBody struct {
	Error *skills.Error `json:"error"`
}

// failedRun is a run that went wrong, as an error: its answer (the
// execution, or the route's shape of it) carries "error" beside the run
// and its provenance.
type failedRun struct {
	x      *runs.Execution
	answer any
}

func (f *failedRun) Error() string { return f.x.Error.Error() }

// fail is the error a handler returns for a request it refuses.
func fail(code, format string, a ...any) error {
	return &skills.Error{Code: code, Message: fmt.Sprintf(format, a...)}
}

// handle adapts a handler that returns its errors: the one place an error
// becomes a response.
func (s *Service) handle(h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	}
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

// writeError answers with err: an *skills.Error's code and its status, a
// failed run's error with the run, or 500 for anything else (the host's own
// failure, logged, its cause not sent).
func (s *Service) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var body errorBody
	var answer any
	var fr *failedRun
	var se *skills.Error
	switch {
	case errors.As(err, &fr):
		body, answer = errorBody{Error: fr.x.Error}, fr.answer
	case errors.As(err, &se):
		if se.Code == runs.CodeApprovalRequired {
			hinted := *se
			hinted.Message += `: send "approved": true`
			se = &hinted
		}
		body = errorBody{Error: se}
	default:
		s.log.Error("internal error", "path", r.URL.Path, "err", err.Error())
		body = errorBody{Error: &skills.Error{Code: CodeInternal, Message: "internal error"}}
	}
	info(r).code = body.Error.Code
	status, ok := statusOf[body.Error.Code]
	if !ok {
		status = http.StatusInternalServerError
	}
	if body.Error.Code == CodeBusy || body.Error.Code == CodeLoading {
		w.Header().Set("Retry-After", "1")
	}
	if answer == nil {
		answer = body
	}
	s.writeJSON(w, status, answer)
}
