// Package hostfuncs holds the Go side of every capability a guest can call:
// the workspace (read_file, write_file, list_files, search_files), ask_llm,
// submit_result, and the Table embedders extend with functions of their own.
//
// A capability knows nothing about how the call crossed from the guest: it
// receives decoded JSON arguments and returns a JSON-encodable value or an
// error. The transport lives in the wasm package.
//
//	t := hostfuncs.Table{}
//	t.Add("add", hostfuncs.Typed(func(ctx context.Context, a struct{ X, Y int }) (int, error) {
//		return a.X + a.Y, nil
//	}))
package hostfuncs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"
)

// Func is one capability. args is the JSON object of the guest's keyword
// arguments (never nil: "{}" when there are none). The guest's positional
// arguments of an embedder's function, if any, are under the key
// PositionalKey, a JSON array; Typed (DecodeArgs) binds them to A's fields
// in declared order.
type Func func(ctx context.Context, args json.RawMessage) (any, error)

// PositionalKey is the key of the positional arguments in a call of an
// embedder's function that had some: not a Python identifier, so no keyword
// argument written as name=value has it.
const PositionalKey = "*"

// Table maps the names a guest calls to capabilities. A run gets its own
// Table, so capabilities with per-run state (an overlay, a budget) live in it.
type Table map[string]Func

// Add registers fn under name, replacing any earlier one.
func (t Table) Add(name string, fn Func) { t[name] = fn }

// Names lists the registered names, sorted, for the guest's prelude.
func (t Table) Names() []string {
	names := make([]string, 0, len(t))
	for n := range t {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Typed adapts a Go function with a struct of arguments to a Func: the guest's
// arguments are decoded into A, positional ones bound to its fields in declared
// order, keyword ones by name (unknown keys are an error, reported to the
// guest as ValueError, too many positional ones a TypeError) and R is encoded
// as JSON.
func Typed[A, R any](fn func(ctx context.Context, args A) (R, error)) Func {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var a A
		if err := DecodeArgs(raw, &a); err != nil {
			return nil, err
		}
		return fn(ctx, a)
	}
}

// DecodeArgs decodes a guest's arguments strictly into v: keyword ones by
// name, and the positional ones (under PositionalKey) into the fields of the
// struct v points to, in declared order, as Python binds them to parameters.
func DecodeArgs(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if bytes.Contains(raw, []byte(`"`+PositionalKey+`"`)) {
		var err error
		if raw, err = bindPositional(raw, v); err != nil {
			return err
		}
	}
	if fastDecode(raw, v) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Errorf(ValueError, "bad arguments: %v", err)
	}
	return nil
}

// bindPositional rewrites raw's positional arguments as keyword ones: the
// names of v's struct fields, in declared order, as encoding/json names them.
func bindPositional(raw json.RawMessage, v any) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, Errorf(ValueError, "bad arguments: %v", err)
	}
	posRaw, ok := obj[PositionalKey]
	if !ok {
		return raw, nil
	}
	delete(obj, PositionalKey)
	var pos []json.RawMessage
	if err := json.Unmarshal(posRaw, &pos); err != nil {
		return nil, Errorf(ValueError, "bad arguments: positional arguments: %v", err)
	}
	names := paramNames(reflect.TypeOf(v))
	if len(pos) > len(names) {
		return nil, Errorf(TypeError, "takes %d positional argument%s (%s) but %d were given",
			len(names), plural(len(names)), strings.Join(names, ", "), len(pos))
	}
	for i, val := range pos {
		for k := range obj {
			if strings.EqualFold(k, names[i]) {
				return nil, Errorf(TypeError, "got multiple values for argument %q", names[i])
			}
		}
		obj[names[i]] = val
	}
	return json.Marshal(obj)
}

// paramNames are the names encoding/json gives the exported fields of the
// struct t points to, in declared order; none for another type.
func paramNames(t reflect.Type) []string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for f := range t.Fields() {
		if !f.IsExported() || f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// The Python exception classes a capability may ask the guest to raise.
// Anything else surfaces in the guest as wasmpy.HostError.
const (
	ValueError         = "ValueError"
	TypeError          = "TypeError"
	PermissionError    = "PermissionError"
	FileNotFoundError  = "FileNotFoundError"
	IsADirectoryError  = "IsADirectoryError"
	NotADirectoryError = "NotADirectoryError"
	OSError            = "OSError" // size caps and quotas, as Python's ENOSPC/EFBIG would be
	TimeoutError       = "TimeoutError"
	ConnectionError    = "ConnectionError"
	UnicodeError       = "UnicodeDecodeError"
	HostError          = "HostError"
	LLMError           = "LLMError"
	BudgetError        = "BudgetExceeded"
	ResultError        = "ResultError"
)

// Error is a failure the guest sees as a Python exception of class Type.
type Error struct {
	Type    string
	Message string
}

func (e *Error) Error() string { return e.Type + ": " + e.Message }

// Errorf builds an *Error of the given Python exception class.
func Errorf(typ, format string, args ...any) error {
	return &Error{Type: typ, Message: fmt.Sprintf(format, args...)}
}

// AsError returns err as the *Error the guest will see: an *Error in the
// chain as is, anything else as a HostError carrying its message.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Type: HostError, Message: err.Error()}
}

// TruncateUTF8 returns b as a string of at most n bytes, cut at a rune
// boundary.
func TruncateUTF8(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n])
}
