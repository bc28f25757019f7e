package jsonschema_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/internal/jsonschema"
)

func TestCompileAndValidate(t *testing.T) {
	s, err := jsonschema.Compile([]byte(`{"type": "object", "properties": {"mail": {"type": "string", "format": "email"},
		"n": {"type": "integer", "maximum": 3}}, "required": ["n"]}`))
	require.NoError(t, err)
	for _, tc := range []struct {
		value string
		want  []jsonschema.Violation
	}{
		{`{"n": 1, "mail": "a@example.com"}`, nil},
		{`{"n": 1, "mail": "not an address"}`, []jsonschema.Violation{{Pointer: "/mail", Message: "'not an address' is not valid email: missing @"}}},
		{`{"n": 4}`, []jsonschema.Violation{{Pointer: "/n", Message: "maximum: got 4, want 3"}}},
		{`{}`, []jsonschema.Violation{{Pointer: "", Message: "missing property 'n'"}}},
	} {
		vs, err := s.Validate([]byte(tc.value))
		require.NoError(t, err)
		require.Equal(t, tc.want, vs, tc.value)
	}
	require.Equal(t, "at (root): missing property 'n'", jsonschema.Describe([]jsonschema.Violation{{Pointer: "", Message: "missing property 'n'"}}))

	_, err = s.Validate([]byte(`{"n": 1, "mail": "\ud800@example.com"}`))
	require.ErrorContains(t, err, `unpaired UTF-16 surrogate \ud800`)
	_, err = s.Validate([]byte(`{"n": `))
	require.Error(t, err)
	_, err = s.Validate([]byte(strings.Repeat("[", jsonschema.MaxValueDepth+1) + strings.Repeat("]", jsonschema.MaxValueDepth+1)))
	require.ErrorContains(t, err, "nested deeper than 512")
}

func TestCompileRefuses(t *testing.T) {
	for _, tc := range []struct{ name, schema, err string }{
		{"not JSON", `{"type":`, "not JSON"},
		{"bad keyword value", `{"type": "nonsense"}`, "does not compile"},
		{"external ref", `{"$ref": "https://example.com/s.json"}`, `external $ref "https://example.com/s.json" not allowed`},
		{"too deep", strings.Repeat(`{"items": `, jsonschema.MaxDepth) + "{}" + strings.Repeat("}", jsonschema.MaxDepth),
			"nested deeper than 64 levels (at byte 640) (the limit for a schema)"},
		{"too many subschemas", `{"anyOf": [` + strings.Repeat(`{},`, jsonschema.MaxContainers) + `{}]}`,
			"more than 2000 arrays and objects"},
		{"too large", `{"description": "` + strings.Repeat("x", jsonschema.MaxBytes) + `"}`, "larger than 256 KiB (the limit for a schema)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := jsonschema.Compile([]byte(tc.schema))
			require.ErrorContains(t, err, tc.err)
		})
	}
	_, err := jsonschema.Compile([]byte(`{"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"a": {}}, "$ref": "#/definitions/a"}`))
	require.NoError(t, err, "draft 7 is known")
}

// The schema of issue 11: "items" nested 4000 deep, 39 KB, compiled for
// more than 15 s; it is refused at once now, and a schema at the bounds
// compiles quickly.
func TestCompileIsBounded(t *testing.T) {
	deep := strings.Repeat(`{"items": `, 4000) + "{}" + strings.Repeat("}", 4000)
	start := time.Now()
	_, err := jsonschema.Compile([]byte(deep))
	require.ErrorContains(t, err, "nested deeper than 64 levels")
	require.Less(t, time.Since(start), 100*time.Millisecond)

	// Chains as deep as allowed under {"anyOf": [...]}, as many as allowed.
	chain := strings.Repeat(`{"items": `, jsonschema.MaxDepth-3) + "{}" + strings.Repeat("}", jsonschema.MaxDepth-3)
	var b strings.Builder
	b.WriteString(`{"anyOf": [`)
	for n := 3; n+2*(jsonschema.MaxDepth-2) <= jsonschema.MaxContainers; n += jsonschema.MaxDepth - 2 {
		fmt.Fprintf(&b, "%s,", chain)
	}
	b.WriteString(`{}]}`)
	start = time.Now()
	_, err = jsonschema.Compile([]byte(b.String()))
	require.NoError(t, err)
	took := time.Since(start)
	t.Logf("a schema at the bounds (%d bytes) compiled in %v", b.Len(), took)
	require.Less(t, took, 5*time.Second, "bounded, with room for a loaded machine")
}
