package workspace

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/hostfuncs"
)

// call invokes a registered capability the way the transport does: args
// encoded as a JSON object, the result encoded back to JSON.
func call(t *testing.T, tbl hostfuncs.Table, name string, args any) (json.RawMessage, error) {
	t.Helper()
	fn, ok := tbl[name]
	require.True(t, ok, "capability %q not registered", name)
	raw, ok := args.(string)
	if !ok {
		b, err := json.Marshal(args)
		require.NoError(t, err)
		raw = string(b)
	}
	v, err := fn(context.Background(), json.RawMessage(raw))
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(v)
	require.NoError(t, err)
	return out, nil
}

// requireGuestError asserts err reaches the guest as Python class typ.
func requireGuestError(t *testing.T, err error, typ string) *hostfuncs.Error {
	t.Helper()
	require.Error(t, err)
	e := hostfuncs.AsError(err)
	require.Equal(t, typ, e.Type, "error: %v", err)
	require.NotEmpty(t, e.Message)
	return e
}

type M = map[string]any
