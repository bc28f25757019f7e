package skills

import "github.com/wasmpy/wasmpy"

// Error is a refusal with a stable code, the one error shape of every front
// end's answers: the registry's (versions.go's codes), and package runs'
// for a run refused or that did not produce a valid output.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Kind is the run's error.kind, for run_failed and timeout.
	Kind wasmpy.Kind `json:"kind,omitempty"`
	// Pointer locates the first schema violation (RFC 6901, "" for the whole
	// value), for invalid_input and invalid_output.
	Pointer    *string     `json:"pointer,omitempty"`
	Violations []Violation `json:"violations,omitempty"`
	// Problems are every reason a skill given to register does not load,
	// for invalid_skill.
	Problems []Problem `json:"problems,omitempty"`
}

func (e *Error) Error() string { return "skills: " + e.Code + ": " + e.Message }

// SchemaError is the Error, of code, for what (the arguments, an output)
// failing its schema with violations vs (at least one): the first one's
// pointer, and every one described.
func SchemaError(code, what string, vs []Violation) *Error {
	p := vs[0].Pointer
	return &Error{Code: code, Message: what + " does not match the schema: " + describe(vs), Pointer: &p, Violations: vs}
}
