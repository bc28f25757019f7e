package hostfuncs

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type flatArgs struct {
	Path   string            `json:"path"`
	Binary bool              `json:"binary,omitempty"`
	N      int               // no tag: its Go name
	Skip   int               `json:"-"`
	Dash   int               `json:"-,"`
	Tags   []string          `json:"tags"`
	Meta   map[string]any    `json:"meta"`
	Ptr    *float64          `json:"ptr"`
	Extra  map[string]string `json:"extra"`
}

type nestedArgs struct {
	Inner struct{ A int } `json:"inner"`
}

type timeArgs struct {
	When time.Time `json:"when"`
}

type embeddedArgs struct {
	flatArgs
	Z int
}

// strictDecode is what DecodeArgs did before its fast path: the reference.
func strictDecode(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// TestFastDecodeMatchesStrictDecoder: wherever the fast path takes an input,
// it decodes what the strict Decoder does; an input the Decoder refuses
// (unknown keys at any depth, trailing data, bad JSON) never goes fast.
func TestFastDecodeMatchesStrictDecoder(t *testing.T) {
	inputs := []string{
		`{}`, ` { } `, `{"path":"a","binary":true}`, `{"PATH":"a"}`, `{"n":3}`, `{"N":3}`,
		`{"path":"a","nope":1}`, `{"Skip":1}`, `{"-":2}`, `{"tags":["x","y"],"meta":{"k":[1,{"z":2}]}}`,
		`{"ptr":1.5}`, `{"ptr":null}`, `{"path":"a\"b","extra":{"q":"}"}}`, `{"pa\u0074h":"a"}`,
		`{"path":"a"} trailing`, `{"path":"a"}{}`, `{"path":1}`, `{"path":"a",}`, `[1]`, `"s"`, ``, `{`,
		`{"path" "a"}`, `{"path":"a" "n":1}`, `{"inner":{"A":1}}`, `{"inner":{"B":1}}`, `{"when":"2026-01-02T03:04:05Z"}`,
		`{"when":"x"}`, `{"Z":1,"path":"p"}`, `{"meta":{"a":"]"},"n":2}`, `{"tags":[]  ,  "n" : 4 }`,
	}
	types := []reflect.Type{reflect.TypeFor[flatArgs](), reflect.TypeFor[nestedArgs](),
		reflect.TypeFor[timeArgs](), reflect.TypeFor[embeddedArgs](), reflect.TypeFor[map[string]any]()}
	for _, typ := range types {
		for _, in := range inputs {
			want := reflect.New(typ)
			wantErr := strictDecode([]byte(in), want.Interface())
			got := reflect.New(typ)
			fast := fastDecode([]byte(in), got.Interface())
			if wantErr != nil {
				require.False(t, fast, "%s %s: the fast path took what the Decoder refuses (%v)", typ, in, wantErr)
				continue
			}
			if fast {
				require.Equal(t, want.Interface(), got.Interface(), "%s %s", typ, in)
			}
			// Through DecodeArgs, the same either way.
			got = reflect.New(typ)
			require.NoError(t, DecodeArgs(json.RawMessage(in), got.Interface()), "%s %s", typ, in)
			require.Equal(t, want.Interface(), got.Interface(), "%s %s", typ, in)
		}
	}
	// The common shapes do go fast.
	for _, in := range []string{`{}`, `{"path":"a","binary":true}`, `{"PATH":"a"}`, `{"tags":["x"],"meta":{"k":[1,{"z":2}]}}`} {
		require.True(t, fastDecode([]byte(in), new(flatArgs)), in)
	}
	require.True(t, fastDecode([]byte(`{"X":1}`), new(struct{ X int })))
	// The kinds that must not.
	require.False(t, fastDecode([]byte(`{"inner":{"A":1}}`), new(nestedArgs)))
	require.False(t, fastDecode([]byte(`{"when":"2026-01-02T03:04:05Z"}`), new(timeArgs)))
	require.False(t, fastDecode([]byte(`{"Z":1}`), new(embeddedArgs)))
	require.False(t, fastDecode([]byte(`{"pa\u0074h":"a"}`), new(flatArgs)))
}

func FuzzFastDecode(f *testing.F) {
	f.Add(`{"path":"a","binary":true,"tags":["x"]}`)
	f.Add(`{"meta":{"a":"]"},"n":2}`)
	f.Fuzz(func(t *testing.T, in string) {
		want := new(flatArgs)
		wantErr := strictDecode([]byte(in), want)
		got := new(flatArgs)
		if fastDecode([]byte(in), got) {
			if wantErr != nil {
				t.Fatalf("%q: fast path took what the Decoder refuses: %v", in, wantErr)
			}
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("%q: fast %+v, Decoder %+v", in, got, want)
			}
		}
	})
}
