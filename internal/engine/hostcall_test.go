package engine

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

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
		"data": func(ctx context.Context, args json.RawMessage) (any, error) {
			b, ok := hostfuncs.Data(ctx)
			if !ok {
				return nil, hostfuncs.Errorf(hostfuncs.ValueError, "no data")
			}
			return hostfuncs.Bytes(b), nil
		},
		"text":    func(ctx context.Context, args json.RawMessage) (any, error) { return hostfuncs.Text("héllo"), nil },
		"badtext": func(ctx context.Context, args json.RawMessage) (any, error) { return hostfuncs.Text{0xff}, nil },
	}}, []byte(`{"code":"pass"}`), io.Discard, io.Discard)
	close(st.ready)
	return st
}

// guestCall does what the C module does: call, then take. The name goes
// at 0, args at 256, data at 1 << 15 (data nil: none); the body comes back
// at 1 << 16.
func guestCall(ctx context.Context, mod *wazerotest.Module, fn, args string, data []byte) (uint32, []byte) {
	mem := mod.Memory()
	mem.Write(0, []byte(fn))
	mem.Write(256, []byte(args))
	dataLen := uint64(noData)
	if data != nil {
		mem.Write(1<<15, data)
		dataLen = uint64(len(data))
	}
	stack := []uint64{0, uint64(len(fn)), 256, uint64(len(args)), 1 << 15, dataLen}
	hostCall(ctx, wazeroInstance{mod}, stack)
	n := uint32(stack[0])
	if n == failed {
		return n, nil
	}
	stack = []uint64{1 << 16, uint64(n)}
	hostTake(ctx, wazeroInstance{mod}, stack)
	out, _ := mem.Read(1<<16, n)
	return uint32(stack[0]), out
}

func TestHostCallProtocol(t *testing.T) {
	st := testState()
	ctx := context.WithValue(context.Background(), stateKey{}, st)
	mod := wazerotest.NewModule(wazerotest.NewMemory(4 << 16))

	kind, out := guestCall(ctx, mod, "echo", `{"x":[1,"two"]}`, nil)
	require.Equal(t, kindJSON, kind)
	require.JSONEq(t, `{"x":[1,"two"]}`, string(out))

	// Attached data reaches the capability raw; bytes and text come back raw.
	kind, out = guestCall(ctx, mod, "data", "", []byte{0, 1, 2, 0xff})
	require.Equal(t, kindBytes, kind)
	require.Equal(t, []byte{0, 1, 2, 0xff}, out)
	kind, out = guestCall(ctx, mod, "data", "", []byte{})
	require.Equal(t, kindBytes, kind)
	require.Empty(t, out)
	kind, out = guestCall(ctx, mod, "data", "", nil)
	require.Equal(t, kindError, kind, "no data attached")
	require.Contains(t, string(out), "no data")
	kind, out = guestCall(ctx, mod, "text", "", nil)
	require.Equal(t, kindText, kind)
	require.Equal(t, "héllo", string(out))
	kind, out = guestCall(ctx, mod, "badtext", "", nil)
	require.Equal(t, kindError, kind)
	require.JSONEq(t, `{"type":"HostError","message":"the host's text answer is not valid UTF-8"}`, string(out))

	kind, out = guestCall(ctx, mod, "fail", "", nil)
	require.Equal(t, kindError, kind)
	require.JSONEq(t, `{"type":"PermissionError","message":"no"}`, string(out))

	_, out = guestCall(ctx, mod, "panic", "", nil)
	require.Contains(t, string(out), `"HostError"`)

	kind, out = guestCall(ctx, mod, "_job", "", nil)
	require.Equal(t, kindJSON, kind)
	require.JSONEq(t, `{"code":"pass"}`, string(out))

	for _, bad := range []struct{ fn, args string }{
		{"", ""}, {strings.Repeat("f", maxFnName+1), ""}, {"echo", "[1]"}, {"echo", "not json"},
		{"echo", `{"a":1} x`}, {"echo", `"x"`}, {"nope", ""}, {"_report", `{"status":5}`},
	} {
		kind, out = guestCall(ctx, mod, bad.fn, bad.args, nil)
		require.Equal(t, kindError, kind, "%+v", bad)
		var e map[string]string
		require.NoError(t, json.Unmarshal(out, &e))
		require.NotEmpty(t, e["type"])
		require.NotEmpty(t, e["message"])
	}

	// take without a call, twice, or with the wrong length: the exchange fails.
	stack := []uint64{0, 10}
	hostTake(ctx, wazeroInstance{mod}, stack)
	require.Equal(t, uint64(failed), stack[0])
	mod.Memory().Write(0, []byte("echo"))
	call := func() uint64 {
		s := []uint64{0, 4, 0, 0, 0, noData}
		hostCall(ctx, wazeroInstance{mod}, s)
		return s[0]
	}
	call()
	require.Equal(t, uint64(failed), call(), "out of order: the first response was never taken")
	stack = []uint64{1 << 16, call() + 1}
	hostTake(ctx, wazeroInstance{mod}, stack)
	require.Equal(t, uint64(failed), stack[0])

	// Out of bounds, oversized, or without a run: failed, no panic.
	for _, s := range [][]uint64{
		{4<<16 - 2, 10, 0, 0, 0, noData},          // name out of bounds
		{0, 4, 4<<16 - 2, 10, 0, noData},          // args out of bounds
		{0, 4, 0, 0, 4<<16 - 2, 10},               // data out of bounds
		{0, 4, 0, 0, 0, maxRequest},               // too much together
		{0, 4, 0, maxRequest + 1, 0, noData},      // args alone too large
		{0, 4, 0, 0, 1 << 16, noData - 1},         // data too large (and out of bounds)
		{0xFFFFFFFF, 0xFFFFFFFF, 0, 0, 0, noData}, // wraps around
	} {
		hostCall(ctx, wazeroInstance{mod}, s)
		require.Equal(t, uint64(failed), s[0], "%v", s)
	}
	s := []uint64{0, 4, 0, 0, 0, noData}
	hostCall(context.Background(), wazeroInstance{mod}, s)
	require.Equal(t, uint64(failed), s[0])

	// echo, data three times, text, badtext, fail, panic and the two
	// echoes that ran above; _job and _report are the runner's, not
	// capabilities, and the refused calls ran nothing.
	require.Equal(t, 10, st.nCalls)
	require.False(t, st.calls[6].OK)
	require.Equal(t, "PermissionError", st.calls[6].Error)
}

// FuzzServe feeds the host whatever a hostile guest might send.
func FuzzServe(f *testing.F) {
	for _, seed := range []struct {
		fn, args string
		data     []byte
	}{{"echo", `{"a":1}`, nil}, {"_report", `{"status":"ok"}`, nil}, {"_job", "", nil}, {"echo", "{", nil},
		{"echo", `"x"`, []byte("x")}, {"data", "[]", []byte{}}, {"", "null", nil}, {"text", " {} ", nil}} {
		f.Add(seed.fn, seed.args, seed.data, seed.data == nil)
	}
	f.Fuzz(func(t *testing.T, fn, args string, data []byte, none bool) {
		st := testState()
		req := request{Fn: fn, Args: json.RawMessage(args), Data: data}
		if none {
			req.Data = nil
		} else if req.Data == nil {
			req.Data = []byte{}
		}
		resp := st.serve(context.Background(), req)
		require.NotNil(t, resp.body)
		switch resp.kind {
		case kindJSON:
			require.True(t, json.Valid(resp.body), "response %q is not JSON", resp.body)
		case kindError:
			var e map[string]string
			require.NoError(t, json.Unmarshal(resp.body, &e), "error %q is not a JSON object of strings", resp.body)
			require.NotEmpty(t, e["type"])
		case kindText:
			require.True(t, utf8.Valid(resp.body))
		case kindBytes:
		default:
			t.Fatalf("response of kind %d", resp.kind)
		}
	})
}
