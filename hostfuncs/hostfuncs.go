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
	"sort"
	"unicode/utf8"
)

// Func is one capability. args is the JSON object of the guest's keyword
// arguments (never nil: "{}" when there are none).
type Func func(ctx context.Context, args json.RawMessage) (any, error)

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
// keyword arguments are decoded into A (unknown keys are an error, reported to
// the guest as ValueError) and R is encoded as JSON.
func Typed[A, R any](fn func(ctx context.Context, args A) (R, error)) Func {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var a A
		if err := DecodeArgs(raw, &a); err != nil {
			return nil, err
		}
		return fn(ctx, a)
	}
}

// DecodeArgs decodes a guest's keyword arguments strictly into v.
func DecodeArgs(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return Errorf(ValueError, "bad arguments: %v", err)
	}
	return nil
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
