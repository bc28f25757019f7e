// Package jsonschema is wasmpy's one JSON Schema compiler, with one
// configuration, for skills' input and output schemas and for the schema a
// run's submit_result value must match: the same schema gives the same
// verdict wherever it is used.
//
//	s, err := jsonschema.Compile(schemaText)
//	vs, err := s.Validate(valueText) // nil: valid
//
// The configuration: draft 2020-12 unless "$schema" names another (draft 7
// and the others santhosh-tekuri/jsonschema knows); "format" is asserted, not
// just annotated; a schema may not $ref anything outside itself.
//
// A schema's size and shape are bounded before it is compiled (MaxBytes,
// MaxDepth, MaxContainers): the compiler's time grows with the square of a
// schema's subschemas and faster with their nesting (a 39 KB schema nesting
// "items" 4000 deep compiles for minutes), and schemas come from skill
// authors and callers.
package jsonschema

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/wasmpy/wasmpy/internal/jsontext"
)

// Bounds on a schema's JSON text. Compiling a schema at all three bounds
// takes a few hundred milliseconds.
const (
	MaxBytes      = 256 << 10
	MaxDepth      = 64   // nesting of arrays and objects
	MaxContainers = 2000 // arrays and objects in all, about the subschemas
)

// MaxValueDepth bounds the nesting of a value Validate checks.
const MaxValueDepth = 512

// maxViolations caps the violations one validation reports.
const maxViolations = 20

// schemaURL names a schema inside its compiler; nothing is fetched.
const schemaURL = "mem:///wasmpy/schema.json"

// Schema is a compiled schema, safe for concurrent use.
type Schema struct{ s *jsonschema.Schema }

// Compile checks text's bounds and compiles it.
func Compile(text []byte) (*Schema, error) {
	if len(text) > MaxBytes {
		return nil, fmt.Errorf("larger than %d KiB (the limit for a schema)", MaxBytes>>10)
	}
	if err := jsontext.Check(text, jsontext.Limits{Depth: MaxDepth, Containers: MaxContainers}); err != nil {
		return nil, fmt.Errorf("%w (the limit for a schema)", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("does not compile: %s", flatten(err.Error()))
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("does not compile: %s", flatten(err.Error()))
	}
	return &Schema{s}, nil
}

// noLoader refuses every external reference: a schema is self-contained.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external $ref %q not allowed", url)
}

// Violation is one way a value fails its schema.
type Violation struct {
	// Pointer locates the failing part of the value (RFC 6901); "" is the
	// whole value.
	Pointer string
	Message string
}

var printer = message.NewPrinter(language.English)

// Validate checks a JSON text against s and lists what fails (at most 20),
// or nil. The error is for a text that is not JSON, or that holds an unpaired
// surrogate escape, or nests deeper than MaxValueDepth.
func (s *Schema) Validate(data []byte) ([]Violation, error) {
	if err := jsontext.Check(data, jsontext.Limits{Depth: MaxValueDepth}); err != nil {
		return nil, err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	err = s.s.Validate(inst)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, err
	}
	var out []Violation
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(out) == maxViolations {
			return
		}
		if len(e.Causes) == 0 {
			out = append(out, Violation{Pointer: pointer(e.InstanceLocation), Message: e.ErrorKind.LocalizedString(printer)})
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return out, nil
}

// pointer formats an instance location as an RFC 6901 pointer.
func pointer(tokens []string) string {
	var b strings.Builder
	esc := strings.NewReplacer("~", "~0", "/", "~1")
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(esc.Replace(t))
	}
	return b.String()
}

// Describe joins violations into one line for a message: "at /p: reason",
// the first three, "(root)" for the whole value.
func Describe(vs []Violation) string {
	parts := make([]string, 0, 4)
	for i, v := range vs {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(vs)-3))
			break
		}
		p := v.Pointer
		if p == "" {
			p = "(root)"
		}
		parts = append(parts, fmt.Sprintf("at %s: %s", p, v.Message))
	}
	return strings.Join(parts, "; ")
}

// flatten makes the compiler's multi-line errors one line.
func flatten(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(lines, " ")
}
