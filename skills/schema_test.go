package skills

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/hostfuncs"
)

// A skill's schema and a run's result schema are one compiler with one
// configuration: the same schema gives the same verdict in both (issue 11:
// skills asserted "format" and submit_result did not).
func TestSchemaVerdictsAgree(t *testing.T) {
	for _, tc := range []struct {
		schema, value string
		valid         bool
	}{
		{`{"type": "object", "properties": {"v": {"format": "email"}}}`, `{"v": "a@example.com"}`, true},
		{`{"type": "object", "properties": {"v": {"format": "email"}}}`, `{"v": "nobody"}`, false},
		{`{"type": "object", "properties": {"v": {"format": "date"}}}`, `{"v": "2025-02-30"}`, false},
		{`{"type": "object", "properties": {"v": {"format": "ipv4"}}}`, `{"v": "10.0.0.1"}`, true},
		{`{"type": "object", "properties": {"v": {"format": "ipv4"}}}`, `{"v": "10.0.0.256"}`, false},
		{`{"type": "object", "properties": {"v": {"format": "uuid"}}}`, `{"v": "not-a-uuid"}`, false},
		{`{"type": "object", "properties": {"v": {"type": "integer"}}}`, `{"v": 1.5}`, false},
	} {
		sk := &Skill{}
		require.Empty(t, sk.loadSchemas([]byte(`{"input": `+tc.schema+`, "output": {}}`)))
		vs, err := sk.ValidateInput(json.RawMessage(tc.value))
		require.NoError(t, err)
		require.Equal(t, tc.valid, vs == nil, "skill input: %s against %s: %v", tc.value, tc.schema, vs)

		sink, err := hostfuncs.NewResultSink([]byte(tc.schema))
		require.NoError(t, err)
		err = sink.Submit(json.RawMessage(tc.value))
		require.Equal(t, tc.valid, err == nil, "submit_result: %s against %s: %v", tc.value, tc.schema, err)
	}
}
