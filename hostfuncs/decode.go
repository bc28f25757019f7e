package hostfuncs

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// A json.Decoder costs a host call more than everything else on the host
// (its buffers: three times json.Unmarshal's time for a small object). So
// DecodeArgs decodes with json.Unmarshal where that is provably the same:
// v points to a flat struct (no struct, embedded or custom-decoded value
// anywhere in its fields, so only the top-level keys can be unknown) and
// every top-level key names one of its fields, as encoding/json matches
// them (exactly, else case-insensitively). Anything else, an error
// included, goes the Decoder's way, which has the last word.

// fastDecode decodes raw into v when that is the same as a strict
// Decoder's decode, and reports whether it did.
func fastDecode(raw []byte, v any) bool {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return false
	}
	names := flatFields(t.Elem())
	if names == nil || !keysKnown(raw, names) {
		return false
	}
	return json.Unmarshal(raw, v) == nil
}

// fieldNames are the JSON names of a flat struct's fields.
type fieldNames map[string]struct{}

var flatCache sync.Map // reflect.Type -> fieldNames (nil: not flat)

// flatFields are the names of struct t's fields, or nil when t is not a
// flat struct.
func flatFields(t reflect.Type) fieldNames {
	if c, ok := flatCache.Load(t); ok {
		return c.(fieldNames)
	}
	var names fieldNames
	if t.Kind() == reflect.Struct && !custom(t) {
		names = fieldNames{}
		for f := range t.Fields() {
			if f.Anonymous || !plain(f.Type, 0) {
				names = nil
				break
			}
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch name {
			case "-":
				if f.Tag.Get("json") == "-" {
					continue
				}
			case "":
				name = f.Name
			}
			if _, dup := names[name]; dup || strings.ContainsAny(name, "\"\\") {
				names = nil // ambiguous, or a tag encoding/json would not take
				break
			}
			names[name] = struct{}{}
		}
	}
	flatCache.Store(t, names)
	return names
}

var (
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textType        = reflect.TypeFor[interface{ UnmarshalText([]byte) error }]()
)

// custom reports whether t (or *t) decodes itself.
func custom(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(unmarshalerType) || p.Implements(unmarshalerType) ||
		t.Implements(textType) || p.Implements(textType)
}

// plain reports whether a value of type t holds no struct and nothing that
// decodes itself: unknown keys cannot hide in it.
func plain(t reflect.Type, depth int) bool {
	if depth > 8 || custom(t) {
		return false
	}
	switch t.Kind() {
	case reflect.Struct:
		return false
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return plain(t.Elem(), depth+1)
	case reflect.Map:
		return plain(t.Key(), depth+1) && plain(t.Elem(), depth+1)
	}
	return true // scalars, strings, interfaces (they decode to maps and slices)
}

// keysKnown reports whether raw is a JSON object whose top-level keys all
// name fields of names, and none is escaped (those go the Decoder's way).
func keysKnown(raw []byte, names fieldNames) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return true
	}
	for i < len(raw) {
		if raw[i] != '"' {
			return false
		}
		end := bytes.IndexByte(raw[i+1:], '"')
		if end < 0 {
			return false
		}
		key := raw[i+1 : i+1+end]
		if bytes.IndexByte(key, '\\') >= 0 || !names.has(key) {
			return false
		}
		i = skipSpace(raw, i+2+end)
		if i >= len(raw) || raw[i] != ':' {
			return false
		}
		if i = skipValue(raw, skipSpace(raw, i+1)); i < 0 {
			return false
		}
		i = skipSpace(raw, i)
		if i >= len(raw) {
			return false
		}
		switch raw[i] {
		case '}':
			return true
		case ',':
			i = skipSpace(raw, i+1)
		default:
			return false
		}
	}
	return false
}

func (n fieldNames) has(key []byte) bool {
	if _, ok := n[string(key)]; ok {
		return true
	}
	for name := range n {
		if bytes.EqualFold([]byte(name), key) {
			return true
		}
	}
	return false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value at b[i:], or -1.
// It only finds the value's end; json.Unmarshal checks the value itself.
func skipValue(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if i >= len(b) {
				return -1
			}
			i++
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			i++
		case ',':
			if depth == 0 {
				return i
			}
			i++
		default:
			i++
		}
		if depth == 0 && i < len(b) && (b[i] == ',' || b[i] == '}' || b[i] == ']' || b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			return i
		}
	}
	if depth == 0 {
		return i
	}
	return -1
}
