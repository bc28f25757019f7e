package skills

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// schemaURL names a skill's schema inside its compiler; nothing is fetched.
const schemaURL = "mem:///wasmpy/skill/schema.json"

// compileSchema compiles one JSON Schema: draft 2020-12 unless its "$schema"
// names another (draft 7 and the others jsonschema/v6 knows). "format" is
// asserted, not just annotated. A schema may not $ref anything outside itself.
func compileSchema(doc any) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(schemaURL)
}

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external $ref %q not allowed", url)
}

// Violation is one way a value fails its schema.
type Violation struct {
	// Pointer locates the failing part of the value (RFC 6901); "" is the
	// whole value.
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

// maxViolations caps the violations one validation reports.
const maxViolations = 20

var schemaPrinter = message.NewPrinter(language.English)

// validate checks a JSON text against s and lists what fails, or nil.
func validate(s *jsonschema.Schema, data []byte) ([]Violation, error) {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	err = s.Validate(inst)
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
			out = append(out, Violation{Pointer: jsonPointer(e.InstanceLocation), Message: e.ErrorKind.LocalizedString(schemaPrinter)})
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return out, nil
}

// jsonPointer formats an instance location as an RFC 6901 pointer.
func jsonPointer(tokens []string) string {
	var b strings.Builder
	esc := strings.NewReplacer("~", "~0", "/", "~1")
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(esc.Replace(t))
	}
	return b.String()
}

// describe joins violations into one line, for messages.
func describe(vs []Violation) string {
	parts := make([]string, 0, len(vs))
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
