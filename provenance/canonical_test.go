package provenance_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/provenance"
)

func TestCanonical(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"b": 1, "a": [true, false, null]}`, `{"a":[true,false,null],"b":1}`},
		{` { "z" : { "y" : 1 , "x" : 2 } } `, `{"z":{"x":2,"y":1}}`},
		{`"tab\there \u00e9 \u2028 \"q\" \\ \u001f"`, "\"tab\\there \u00e9 \u2028 \\\"q\\\" \\\\ \\u001f\""},
		{`[1, 1.0, 1e0, 10e-1, 100, 1e2, 100.00, -0, 0.0, -0.0]`, `[1,1,1,1,100,100,100,0,0,0]`},
		{`[1e21, 1e20, 123456789012345678901, 1234567890123456789012.5, 1.5e-7, 0.000001, 0.0000012, 1E-6, -2.5E+3]`,
			`[1e+21,100000000000000000000,123456789012345678901,1.2345678901234567890125e+21,1.5e-7,0.000001,0.0000012,0.000001,-2500]`},
		{`[0.1, 3.14159, 12.50, 9007199254740993]`, `[0.1,3.14159,12.5,9007199254740993]`},
		// RFC 8785 section 3.2.3: keys sorted by UTF-16 code units.
		{`{"\u20ac": 1, "\r": 2, "\ufb33": 3, "1": 4, "\ud83d\ude00": 5, "\u0080": 6, "\u00f6": 7}`,
			"{\"\\r\":2,\"1\":4,\"\u0080\":6,\"\u00f6\":7,\"\u20ac\":1,\"\U0001F600\":5,\"\ufb33\":3}"},
		{`{}`, `{}`},
		{`[]`, `[]`},
	} {
		got, err := provenance.Canonical([]byte(tc.in))
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, string(got), tc.in)
	}
	for _, bad := range []string{`{"a": 1, "a": 2}`, `{"a": 1} 2`, `[1,`, ``, `{"a" 1}`, strings.Repeat("[", 600) + strings.Repeat("]", 600),
		// Exponents in bounds as written but not once normalised (found by FuzzCanonical).
		`10E1000000000`, `0.01e-999999999`} {
		_, err := provenance.Canonical([]byte(bad))
		require.Error(t, err, bad)
	}
}

func TestHashEqualValuesHashEqually(t *testing.T) {
	h := func(s string) string {
		t.Helper()
		v, err := provenance.Hash([]byte(s))
		require.NoError(t, err)
		require.Len(t, v, 64)
		return v
	}
	base := h(`{"text": "hello", "max_sentences": 3, "opts": {"style": "concise", "n": [1, 2.0]}}`)
	for _, same := range []string{
		`{"opts":{"n":[1,2],"style":"concise"},"max_sentences":3,"text":"hello"}`,
		"{\n  \"max_sentences\": 3.0,\n  \"text\": \"h\\u0065llo\",\n  \"opts\": {\"style\": \"concise\", \"n\": [1e0, 20e-1]}\n}",
	} {
		require.Equal(t, base, h(same), same)
	}
	for _, changed := range []string{
		`{"text": "hello!", "max_sentences": 3, "opts": {"style": "concise", "n": [1, 2]}}`,
		`{"text": "hello", "max_sentences": 4, "opts": {"style": "concise", "n": [1, 2]}}`,
		`{"text": "hello", "max_sentences": 3, "opts": {"style": "concise", "n": [2, 1]}}`,
		`{"text": "hello", "max_sentences": "3", "opts": {"style": "concise", "n": [1, 2]}}`,
		`{"text": "hello", "max_sentences": 3, "opts": {"style": "concise", "n": [1, 2]}, "extra": null}`,
	} {
		require.NotEqual(t, base, h(changed), changed)
	}
	// Integers past 2^53 keep their identity.
	require.NotEqual(t, h(`9007199254740993`), h(`9007199254740992`))
}

func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1.50,"x"]}`, `1e400`, `-0.0e-5`, `"\u0000"`, `[[[]]]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := provenance.Canonical([]byte(s))
		if err != nil {
			return
		}
		// Canonical form is a fixed point.
		c2, err := provenance.Canonical(c)
		require.NoError(t, err)
		require.Equal(t, string(c), string(c2))
	})
}

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := provenance.NewID()
		require.True(t, provenance.ValidID(id), id)
		require.False(t, seen[id])
		seen[id] = true
	}
	require.False(t, provenance.ValidID("not-an-id"))
	require.False(t, provenance.ValidID(strings.ToUpper(provenance.NewID())))
}
