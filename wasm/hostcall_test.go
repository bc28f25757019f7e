package wasm

import (
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero/experimental/wazerotest"

	"github.com/wasmpy/wasmpy/hostfuncs"
)

func testState() *runState {
	st := newRunState(nil)
	st.bind(context.Background(), &Run{Deterministic: true, Host: hostfuncs.Table{
		"echo": func(ctx context.Context, args json.RawMessage) (any, error) { return args, nil },
		"fail": func(ctx context.Context, args json.RawMessage) (any, error) {
			return nil, hostfuncs.Errorf(hostfuncs.PermissionError, "no")
		},
		"panic": func(ctx context.Context, args json.RawMessage) (any, error) { panic("boom") },
	}}, []byte(`{"code":"pass"}`), io.Discard, io.Discard)
	close(st.ready)
	return st
}

// guestCall does what the C module does: call, then take.
func guestCall(ctx context.Context, mod *wazerotest.Module, req []byte) (uint32, []byte) {
	mod.Memory().Write(0, req)
	stack := []uint64{0, uint64(len(req))}
	hostCall(ctx, mod, stack)
	n := uint32(stack[0])
	if n == failed {
		return n, nil
	}
	stack = []uint64{1 << 16, uint64(n)}
	hostTake(ctx, mod, stack)
	out, _ := mod.Memory().Read(1<<16, n)
	return uint32(stack[0]), out
}

func TestHostCallProtocol(t *testing.T) {
	st := testState()
	ctx := context.WithValue(context.Background(), stateKey{}, st)
	mod := wazerotest.NewModule(wazerotest.NewMemory(4 << 16))

	n, out := guestCall(ctx, mod, []byte(`{"fn":"echo","args":{"x":[1,"two"]}}`))
	require.NotEqual(t, uint32(failed), n)
	require.JSONEq(t, `{"ok":{"x":[1,"two"]}}`, string(out))

	_, out = guestCall(ctx, mod, []byte(`{"fn":"fail"}`))
	require.JSONEq(t, `{"error":{"type":"PermissionError","message":"no"}}`, string(out))

	_, out = guestCall(ctx, mod, []byte(`{"fn":"panic"}`))
	require.Contains(t, string(out), `"HostError"`)

	_, out = guestCall(ctx, mod, []byte(`{"fn":"_job"}`))
	require.JSONEq(t, `{"ok":{"code":"pass"}}`, string(out))

	for _, bad := range []string{`not json`, `{"fn":""}`, `{"fn":"echo","args":[1]}`, `{"args":{}}`, `{"fn":"nope"}`, `{"fn":"_report","args":{"status":5}}`} {
		_, out = guestCall(ctx, mod, []byte(bad))
		require.Contains(t, string(out), `"error"`, bad)
	}

	// take without a call, twice, or with the wrong length: the exchange fails.
	stack := []uint64{0, 10}
	hostTake(ctx, mod, stack)
	require.Equal(t, uint64(failed), stack[0])
	mod.Memory().Write(0, []byte(`{"fn":"echo"}`))
	stack = []uint64{0, 13}
	hostCall(ctx, mod, stack)
	stack = []uint64{0, 13}
	hostCall(ctx, mod, stack) // out of order: the first response was never taken
	require.Equal(t, uint64(failed), stack[0])
	stack = []uint64{0, 13}
	hostCall(ctx, mod, stack)
	stack = []uint64{1 << 16, stack[0] + 1}
	hostTake(ctx, mod, stack)
	require.Equal(t, uint64(failed), stack[0])

	// Out of bounds, oversized, or without a run: failed, no panic.
	for _, s := range [][]uint64{{4<<16 - 2, 10}, {0, maxRequest + 1}} {
		hostCall(ctx, mod, s)
		require.Equal(t, uint64(failed), s[0])
	}
	s := []uint64{0, 5}
	hostCall(context.Background(), mod, s)
	require.Equal(t, uint64(failed), s[0])

	// echo, fail, panic and the two echoes that ran above; _job and _report
	// are the runner's, not capabilities, and the refused call ran nothing.
	require.Equal(t, 5, st.nCalls)
	require.False(t, st.calls[1].OK)
	require.Equal(t, "PermissionError", st.calls[1].Error)
}

// FuzzServe feeds the host whatever a hostile guest might send.
func FuzzServe(f *testing.F) {
	for _, seed := range []string{`{"fn":"echo","args":{"a":1}}`, `{"fn":"_report","args":{"status":"ok"}}`, `{"fn":"_job"}`, `{`, `{"fn":"echo","args":"x"}`, `[]`, `null`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, req []byte) {
		st := testState()
		resp := st.serve(context.Background(), req)
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(resp, &m), "response is not JSON: %q", resp)
		_, ok := m["ok"]
		_, isErr := m["error"]
		require.True(t, ok != isErr, "response %q is neither ok nor error", resp)
	})
}
