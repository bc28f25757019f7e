package jsontext_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/wasmpy/wasmpy/internal/jsontext"
)

// What Check accepts, encoding/json decodes without inventing U+FFFD: every
// replacement character in the result was in the text, raw or escaped.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"a": "\ud800"}`, `"\ud83d\ude00"`, `"\\ud800"`, `["\udc00", [[{}]]]`, "\"\xff\"", `"\ufffd"`, `"\ud800\u0041"`, `"\u`, `"\ud800\u`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := jsontext.Check(data, jsontext.Limits{Depth: 64, Containers: 1000})
		var v any
		if err != nil || json.Unmarshal(data, &v) != nil {
			return
		}
		got := strings.Count(flatten(v), "\ufffd")
		had := bytes.Count(data, []byte("\ufffd")) + bytes.Count(bytes.ToLower(data), []byte(`\ufffd`))
		if got > had {
			t.Fatalf("Check passed %q, which decodes to %d U+FFFD from %d", data, got, had)
		}
	})
}

// flatten joins every string and key of a decoded value.
func flatten(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		var b strings.Builder
		for _, e := range v {
			b.WriteString(flatten(e))
		}
		return b.String()
	case map[string]any:
		var b strings.Builder
		for k, e := range v {
			b.WriteString(k + flatten(e))
		}
		return b.String()
	}
	return ""
}
