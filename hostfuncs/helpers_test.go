package hostfuncs

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// call invokes a registered capability the way the transport does: args
// encoded as a JSON object, the result encoded back to JSON.
func call(t *testing.T, tbl Table, name string, args any) (json.RawMessage, error) {
	t.Helper()
	return callCtx(context.Background(), t, tbl, name, args)
}

func callCtx(ctx context.Context, t *testing.T, tbl Table, name string, args any) (json.RawMessage, error) {
	t.Helper()
	fn, ok := tbl[name]
	require.True(t, ok, "capability %q not registered", name)
	var raw []byte
	switch a := args.(type) {
	case string:
		raw = []byte(a)
	default:
		var err error
		raw, err = json.Marshal(args)
		require.NoError(t, err)
	}
	v, err := fn(ctx, raw)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(v)
	require.NoError(t, err)
	return out, nil
}

// requireGuestError asserts err reaches the guest as Python class typ.
func requireGuestError(t *testing.T, err error, typ string) *Error {
	t.Helper()
	require.Error(t, err)
	e := AsError(err)
	require.Equal(t, typ, e.Type, "error: %v", err)
	require.NotEmpty(t, e.Message)
	return e
}

type M = map[string]any
