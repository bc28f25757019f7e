package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// FuzzFilterMessages: whatever a client sends, the filter passes on only
// JSON-RPC messages (or batches), answers every other non-empty line with
// one JSON-RPC error, and never panics.
func FuzzFilterMessages(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		"garbage{\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
		`{"id":3,"method":"x"}` + "\r\n\n" + `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		"\x00\xff\n\n   \n",
		`{"jsonrpc":"2.0","id":{"a":1},"method":"x"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var good, reply bytes.Buffer
		if err := filterMessages(bytes.NewReader(in), &good, &reply, newPending()); err != nil {
			t.Fatal(err)
		}
		lines := 0
		for _, l := range bytes.Split(in, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				lines++
			}
		}
		passed := 0
		sc := bufio.NewScanner(&good)
		sc.Buffer(nil, MaxMessageBytes+2)
		for sc.Scan() {
			passed++
			line := sc.Bytes()
			if bytes.HasPrefix(bytes.TrimSpace(line), []byte("[")) {
				if !json.Valid(line) {
					t.Fatalf("passed an invalid batch: %q", line)
				}
				continue
			}
			if _, err := jsonrpc.DecodeMessage(line); err != nil {
				t.Fatalf("passed a line that is no message: %q: %v", line, err)
			}
		}
		answered := 0
		for _, l := range strings.Split(strings.TrimSuffix(reply.String(), "\n"), "\n") {
			if l == "" {
				continue
			}
			answered++
			var m struct {
				JSONRPC string `json:"jsonrpc"`
				Error   *struct {
					Code    int64  `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(l), &m); err != nil || m.JSONRPC != "2.0" || m.Error == nil || m.Error.Message == "" {
				t.Fatalf("a reply that is no JSON-RPC error: %q", l)
			}
		}
		if passed+answered != lines {
			t.Fatalf("%d non-empty lines, %d passed and %d answered", lines, passed, answered)
		}
	})
}

func TestFilterMessagesTooLong(t *testing.T) {
	var good, reply bytes.Buffer
	in := strings.Repeat("x", MaxMessageBytes+10) + "\n" + `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"
	if err := filterMessages(strings.NewReader(in), &good, &reply, newPending()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(reply.String(), `"code":-32600`) || !strings.Contains(reply.String(), "larger than") {
		t.Fatalf("reply %q", reply.String())
	}
	if good.String() != `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n" {
		t.Fatalf("passed %q", good.String())
	}
}

// answer is what lockedWriter does around writing b to the client.
func answer(p *pending, b []byte) {
	resps := responses(b)
	p.answering(resps)
	p.answered(resps)
}

// TestPending: the requests passed on are pending until a response (alone
// or in a batch) answers them or the client cancels them; notifications
// and invalid lines are not.
func TestPending(t *testing.T) {
	p := newPending()
	var good, reply bytes.Buffer
	// A protocol version that has batches.
	if err := filterMessages(strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize"}`), &good, &reply, p); err != nil {
		t.Fatal(err)
	}
	answer(p, []byte(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-03-26"}}`))
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call"}`,
		`{"id":5,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}`,
	}, "\n")
	if err := filterMessages(strings.NewReader(in), &good, &reply, p); err != nil {
		t.Fatal(err)
	}
	want := func(ids ...any) {
		t.Helper()
		got := map[jsonrpc.ID]bool{}
		for _, v := range ids {
			id, err := jsonrpc.MakeID(v)
			if err != nil {
				t.Fatal(err)
			}
			got[id] = true
		}
		if !maps.Equal(got, p.ids) {
			t.Fatalf("pending %v, want %v", p.ids, got)
		}
	}
	want(1.0, "a", 2.0, 3.0)
	answer(p, []byte(`{"jsonrpc":"2.0","id":"a","result":{}}`+"\n"))
	answer(p, []byte(`[{"jsonrpc":"2.0","id":2,"result":{}},{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"x"}}]`+"\n"))
	want(1.0)
	stop := make(chan struct{})
	close(stop)
	p.drain(stop) // returns: the SDK has stopped reading
	answer(p, []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	want()
	p.drain(nil) // returns: nothing pending
}

// TestStdioBatch drives the SDK's server over the stdio transport with raw
// lines: a batch the SDK would refuse by ending the session (any batch on
// 2025-06-18 and later, an empty one, one with a bad member or a reused
// id) gets one JSON-RPC error and the session answers what follows; on
// 2025-03-26 a valid batch gets its batch of answers.
func TestStdioBatch(t *testing.T) {
	for _, tc := range []struct {
		version string
		batches []string // each refused with -32600
		ok      string   // a valid batch, answered as one (version allows it)
	}{
		{version: "2025-06-18", batches: []string{
			`[{"jsonrpc":"2.0","id":10,"method":"ping"}]`,
			`[{"jsonrpc":"2.0","id":11,"method":"ping"},{"jsonrpc":"2.0","id":12,"method":"tools/list"}]`,
			`[]`,
		}},
		{version: "2025-03-26", batches: []string{
			`[]`,
			`[1,2]`,
			`[{"jsonrpc":"2.0","id":10,"method":"ping"},{"id":11}]`,
			`[{"jsonrpc":"2.0","id":10,"method":"ping"},{"jsonrpc":"2.0","id":10,"method":"ping"}]`,
			`[{"jsonrpc":"2.0","id":10,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}]`,
		}, ok: `[{"jsonrpc":"2.0","id":20,"method":"ping"},{"jsonrpc":"2.0","id":21,"method":"tools/list"}]`},
	} {
		t.Run(tc.version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
			mcp.AddTool(srv, &mcp.Tool{Name: "noop"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{}, nil, nil
			})
			done := make(chan error, 1)
			go func() { done <- srv.Run(ctx, NewStdioTransport(inR, outW)); outW.Close() }()
			lines := bufio.NewScanner(outR)
			send := func(s string) {
				t.Helper()
				if _, err := io.WriteString(inW, s+"\n"); err != nil {
					t.Fatal(err)
				}
			}
			next := func() string {
				t.Helper()
				if !lines.Scan() {
					t.Fatalf("no answer; the session ended: %v", <-done)
				}
				return lines.Text()
			}
			send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + tc.version + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
			require.Contains(t, next(), `"protocolVersion":"`+tc.version+`"`)
			send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			for i, b := range tc.batches {
				send(b)
				var m struct {
					ID    any
					Error struct{ Code int64 }
				}
				line := next()
				require.NoError(t, json.Unmarshal([]byte(line), &m), line)
				require.Equal(t, int64(-32600), m.Error.Code, "%s: %s", b, line)
				require.Nil(t, m.ID, line)
				send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"after%d","method":"ping"}`, i))
				require.JSONEq(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":"after%d","result":{}}`, i), next())
			}
			if tc.ok != "" {
				send(tc.ok)
				var answers []map[string]any
				line := next()
				require.NoError(t, json.Unmarshal([]byte(line), &answers), line)
				require.Len(t, answers, 2, line)
				require.Equal(t, 20.0, answers[0]["id"])
				require.Equal(t, 21.0, answers[1]["id"])
				// The batch's ids are answered: a new batch may reuse them.
				send(`[{"jsonrpc":"2.0","id":20,"method":"ping"}]`)
				require.JSONEq(t, `[{"jsonrpc":"2.0","id":20,"result":{}}]`, next())
			}
			inW.Close()
			require.NoError(t, <-done)
		})
	}
}
