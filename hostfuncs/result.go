package hostfuncs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/wasmpy/wasmpy/internal/jsonschema"
)

// MaxResultBytes caps the JSON text of a submitted result.
const MaxResultBytes = 16 << 20

// ResultSink receives the one value a run submits with submit_result,
// optionally checked against a JSON Schema. The zero value accepts any value
// and is ready to use. A ResultSink is safe for concurrent use.
type ResultSink struct {
	schema *jsonschema.Schema // nil: any value

	mu    sync.Mutex
	value json.RawMessage
}

// NewResultSink compiles schema (see internal/jsonschema: the compiler and
// configuration skills use too); a nil or empty schema accepts any value.
func NewResultSink(schema []byte) (*ResultSink, error) {
	s := &ResultSink{}
	if len(bytes.TrimSpace(schema)) == 0 {
		return s, nil
	}
	var err error
	if s.schema, err = jsonschema.Compile(schema); err != nil {
		return nil, fmt.Errorf("wasmpy: result schema: %w", err)
	}
	return s, nil
}

// Submit records v as the run's result. It fails with ResultError when a
// result was already accepted, when v is larger than MaxResultBytes, or when
// it does not match the schema; a rejected value is not recorded, so the
// guest may submit a corrected one.
func (s *ResultSink) Submit(v json.RawMessage) error {
	if len(v) > MaxResultBytes {
		return Errorf(ResultError, "result too large: %d bytes of JSON, the limit is %d", len(v), MaxResultBytes)
	}
	if !json.Valid(v) {
		return Errorf(ValueError, "result is not valid JSON")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.value != nil {
		return Errorf(ResultError, "submit_result was already called")
	}
	if s.schema != nil {
		vs, err := s.schema.Validate(v)
		if err != nil {
			return Errorf(ValueError, "result: %v", err)
		}
		if vs != nil {
			return Errorf(ResultError, "result does not match the schema: %s", jsonschema.Describe(vs))
		}
	}
	s.value = append(json.RawMessage{}, v...)
	return nil
}

// Value returns a copy of the submitted result, and whether there is one.
func (s *ResultSink) Value() (json.RawMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.value == nil {
		return nil, false
	}
	return append(json.RawMessage{}, s.value...), true
}

// Register adds submit_result to t:
//
//	submit_result {"value": any JSON} → null
//
// Errors: ResultError (second submission, schema mismatch naming the JSON
// pointer and the reason, value too large), ValueError (no "value" key).
func (s *ResultSink) Register(t Table) {
	t.Add("submit_result", Typed(func(ctx context.Context, a struct {
		Value json.RawMessage `json:"value"`
	}) (any, error) {
		if a.Value == nil {
			return nil, Errorf(ValueError, "submit_result needs a value")
		}
		return nil, s.Submit(a.Value)
	}))
}
