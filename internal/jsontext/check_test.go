package jsontext_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/internal/jsontext"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, text, err string
	}{
		{"plain", `{"a": [1, "x", {"b": null}]}`, ""},
		{"a pair", `"\ud83d\ude00"`, ""},
		{"a pair in capitals", `"\uD83D\uDE00"`, ""},
		{"escapes that are not surrogates", `"\u0041\n\\u\"\ud7ff\ue000"`, ""},
		{"an escaped backslash before u", `"\\ud800"`, ""},
		{"brackets in strings do not nest", `"[[[[{{{{"`, ""},
		{"depth at the limit", strings.Repeat("[", 4) + strings.Repeat("]", 4), ""},
		{"lone high", `{"a": "\ud800"}`, `unpaired UTF-16 surrogate \ud800`},
		{"high then text", `"\ud800abcdef"`, `\ud800`},
		{"high at the end", `"\ud800`, `\ud800`},
		{"two highs", `"\ud800\ud800"`, `\ud800`},
		{"lone low", `"x\udc00"`, `\udc00`},
		{"high, escaped non-surrogate", `"\ud800\u0041"`, `\ud800`},
		{"lone surrogate in a key", `{"\udbff": 1}`, `\udbff`},
		{"too deep", strings.Repeat("[", 5) + strings.Repeat("]", 5), "nested deeper than 4 levels"},
		{"containers at the limit", `[[], {}, [], {}, []]`, ""},
		{"too many containers", `[[], {}, [], {}, [], []]`, "more than 6 arrays and objects"},
		{"invalid UTF-8", "\"\xff\"", "not valid UTF-8"},
		{"a surrogate in UTF-8 (CESU)", "\"\xed\xa0\x80\"", "not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := jsontext.Check([]byte(tc.text), jsontext.Limits{Depth: 4, Containers: 6})
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
		})
	}
}

// What Check refuses, encoding/json would have accepted with U+FFFD in place.
func TestCheckCatchesWhatTheDecoderHides(t *testing.T) {
	var s string
	require.NoError(t, json.Unmarshal([]byte(`"\ud800"`), &s))
	require.Equal(t, "\ufffd", s)
	require.Error(t, jsontext.Check([]byte(`"\ud800"`), jsontext.Limits{}))
}
