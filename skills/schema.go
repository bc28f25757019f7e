package skills

import (
	"encoding/json"

	"github.com/wasmpy/wasmpy/internal/jsonschema"
)

// Violation is one way a value fails its schema.
type Violation struct {
	// Pointer locates the failing part of the value (RFC 6901); "" is the
	// whole value.
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

// validate checks a JSON text against s and lists what fails, or nil.
func validate(s *jsonschema.Schema, data json.RawMessage) ([]Violation, error) {
	vs, err := s.Validate(data)
	if err != nil || vs == nil {
		return nil, err
	}
	out := make([]Violation, len(vs))
	for i, v := range vs {
		out[i] = Violation(v)
	}
	return out, nil
}

// describe joins violations into one line, for messages.
func describe(vs []Violation) string {
	in := make([]jsonschema.Violation, len(vs))
	for i, v := range vs {
		in[i] = jsonschema.Violation(v)
	}
	return jsonschema.Describe(in)
}
