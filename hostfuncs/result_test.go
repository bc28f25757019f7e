package hostfuncs

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestResultSinkNoSchema(t *testing.T) {
	for _, name := range []string{"NewResultSink(nil)", "zero value"} {
		t.Run(name, func(t *testing.T) {
			s := &ResultSink{}
			if name != "zero value" {
				var err error
				s, err = NewResultSink(nil)
				require.NoError(t, err)
			}
			tbl := Table{}
			s.Register(tbl)
			_, ok := s.Value()
			require.False(t, ok)

			out, err := call(t, tbl, "submit_result", `{"value": {"answer": 42, "tags": ["a"]}}`)
			require.NoError(t, err)
			require.JSONEq(t, `null`, string(out))
			v, ok := s.Value()
			require.True(t, ok)
			require.JSONEq(t, `{"answer": 42, "tags": ["a"]}`, string(v))

			_, err = call(t, tbl, "submit_result", `{"value": 1}`)
			e := requireGuestError(t, err, ResultError)
			require.Equal(t, "submit_result was already called", e.Message)
			v, _ = s.Value()
			require.JSONEq(t, `{"answer": 42, "tags": ["a"]}`, string(v), "first value kept")
		})
	}

	t.Run("null is a value", func(t *testing.T) {
		s, tbl := &ResultSink{}, Table{}
		s.Register(tbl)
		_, err := call(t, tbl, "submit_result", `{"value": null}`)
		require.NoError(t, err)
		v, ok := s.Value()
		require.True(t, ok)
		require.Equal(t, "null", string(v))
	})

	t.Run("bad arguments", func(t *testing.T) {
		s, tbl := &ResultSink{}, Table{}
		s.Register(tbl)
		_, err := call(t, tbl, "submit_result", `{}`)
		requireGuestError(t, err, ValueError)
		_, err = call(t, tbl, "submit_result", `{"value": 1, "extra": 2}`)
		requireGuestError(t, err, ValueError)
		_, ok := s.Value()
		require.False(t, ok)
	})
}

func TestResultSinkSchema(t *testing.T) {
	schema := []byte(`{
		"type": "object",
		"properties": {
			"n": {"type": "integer", "minimum": 0},
			"items": {"type": "array", "items": {"type": "string"}},
			"a/b": {"type": "boolean"}
		},
		"required": ["n"],
		"additionalProperties": false
	}`)
	tests := []struct {
		name  string
		value string
		want  []string // substrings of the error, none = accepted
	}{
		{"valid", `{"n": 3, "items": ["x"]}`, nil},
		{"big integer", `{"n": 12345678901234567890}`, nil},
		{"wrong type", `{"n": "three"}`, []string{"at /n:", "want integer"}},
		{"minimum", `{"n": -1}`, []string{"at /n:", "minimum"}},
		{"nested", `{"n": 1, "items": ["ok", 2]}`, []string{"at /items/1:"}},
		{"escaped pointer", `{"n": 1, "a/b": 1}`, []string{"at /a~1b:"}},
		{"missing", `{}`, []string{"at (root):", "missing property 'n'"}},
		{"additional", `{"n": 1, "x": 1}`, []string{"at (root):", "'x'"}},
		{"not an object", `[1]`, []string{"at (root):", "want object"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewResultSink(schema)
			require.NoError(t, err)
			tbl := Table{}
			s.Register(tbl)
			_, err = call(t, tbl, "submit_result", `{"value": `+tt.value+`}`)
			if tt.want == nil {
				require.NoError(t, err)
				v, ok := s.Value()
				require.True(t, ok)
				require.JSONEq(t, tt.value, string(v))
				return
			}
			e := requireGuestError(t, err, ResultError)
			require.Contains(t, e.Message, "does not match the schema")
			for _, w := range tt.want {
				require.Contains(t, e.Message, w)
			}
			_, ok := s.Value()
			require.False(t, ok, "rejected values are not recorded")
			_, err = call(t, tbl, "submit_result", `{"value": {"n": 0}}`)
			require.NoError(t, err, "a corrected value may follow a rejected one")
		})
	}

	t.Run("many failures are summarized", func(t *testing.T) {
		s, err := NewResultSink([]byte(`{"type": "array", "items": {"type": "string"}}`))
		require.NoError(t, err)
		err = s.Submit(json.RawMessage(`[1, 2, 3, 4, 5]`))
		e := requireGuestError(t, err, ResultError)
		require.Contains(t, e.Message, "and 2 more")
	})
}

func TestNewResultSinkErrors(t *testing.T) {
	tests := []struct{ name, schema string }{
		{"not JSON", `{`},
		{"invalid schema", `{"type": 12}`},
		{"external ref", `{"$ref": "https://example.com/s.json"}`},
		{"file ref", `{"$ref": "/etc/passwd"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewResultSink([]byte(tt.schema))
			require.ErrorContains(t, err, "wasmpy: result schema")
		})
	}
	s, err := NewResultSink([]byte("  "))
	require.NoError(t, err, "blank means no schema")
	require.NoError(t, s.Submit(json.RawMessage(`1`)))

	_, err = NewResultSink([]byte(`{"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n"}`))
	require.NoError(t, err, "internal refs are fine")
}

func TestResultSinkSize(t *testing.T) {
	s, tbl := &ResultSink{}, Table{}
	s.Register(tbl)
	big := `"` + strings.Repeat("x", MaxResultBytes) + `"`
	_, err := call(t, tbl, "submit_result", `{"value": `+big+`}`)
	e := requireGuestError(t, err, ResultError)
	require.Contains(t, e.Message, "too large")
	_, ok := s.Value()
	require.False(t, ok)

	ok2 := `"` + strings.Repeat("x", MaxResultBytes-2) + `"`
	_, err = call(t, tbl, "submit_result", `{"value": `+ok2+`}`)
	require.NoError(t, err)
}

func TestResultSinkConcurrent(t *testing.T) {
	s := &ResultSink{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := 0
	for range 50 {
		wg.Go(func() {
			if s.Submit(json.RawMessage(`1`)) == nil {
				mu.Lock()
				accepted++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Equal(t, 1, accepted)
}
