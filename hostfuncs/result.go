package hostfuncs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// MaxResultBytes caps the JSON text of a submitted result.
const MaxResultBytes = 16 << 20

// resultSchemaURL names the result schema inside its compiler; nothing is
// ever fetched from it.
const resultSchemaURL = "mem:///wasmpy/result.schema.json"

// ResultSink receives the one value a run submits with submit_result,
// optionally checked against a JSON Schema. The zero value accepts any value
// and is ready to use. A ResultSink is safe for concurrent use.
type ResultSink struct {
	schema *jsonschema.Schema

	mu    sync.Mutex
	value json.RawMessage
}

// NewResultSink compiles schema (JSON Schema, draft 2020-12 unless it says
// otherwise in "$schema"); a nil or empty schema accepts any value. The
// schema may not $ref anything outside itself.
func NewResultSink(schema []byte) (*ResultSink, error) {
	s := &ResultSink{}
	if len(bytes.TrimSpace(schema)) == 0 {
		return s, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("wasmpy: result schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(resultSchemaURL, doc); err != nil {
		return nil, fmt.Errorf("wasmpy: result schema: %w", err)
	}
	if s.schema, err = c.Compile(resultSchemaURL); err != nil {
		return nil, fmt.Errorf("wasmpy: result schema: %w", err)
	}
	return s, nil
}

// noLoader refuses every external reference: a schema is self-contained.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external $ref %q not allowed", url)
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
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(v))
		if err != nil {
			return Errorf(ValueError, "result is not valid JSON")
		}
		if err := s.schema.Validate(inst); err != nil {
			return Errorf(ResultError, "result does not match the schema: %s", describeSchemaError(err))
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

var schemaPrinter = message.NewPrinter(language.English)

// describeSchemaError lists the leaf failures of a validation error as
// "at /pointer: reason", at most three of them.
func describeSchemaError(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var leaves []*jsonschema.ValidationError
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			leaves = append(leaves, e)
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	const show = 3
	parts := make([]string, 0, show+1)
	for i, l := range leaves {
		if i == show {
			parts = append(parts, fmt.Sprintf("and %d more", len(leaves)-show))
			break
		}
		parts = append(parts, fmt.Sprintf("at %s: %s", jsonPointer(l.InstanceLocation), l.ErrorKind.LocalizedString(schemaPrinter)))
	}
	return strings.Join(parts, "; ")
}

// jsonPointer formats an instance location as an RFC 6901 pointer, or
// "(root)" for the whole value (whose pointer is empty).
func jsonPointer(tokens []string) string {
	if len(tokens) == 0 {
		return "(root)"
	}
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}
