package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

// TestPending: the requests passed on are pending until a response (alone
// or in a batch) answers them or the client cancels them; notifications
// and invalid lines are not.
func TestPending(t *testing.T) {
	p := newPending()
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call"}`,
		`{"id":5,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}`,
	}, "\n")
	var good, reply bytes.Buffer
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
	p.answered([]byte(`{"jsonrpc":"2.0","id":"a","result":{}}` + "\n"))
	p.answered([]byte(`[{"jsonrpc":"2.0","id":2,"result":{}},{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"x"}}]` + "\n"))
	want(1.0)
	stop := make(chan struct{})
	close(stop)
	p.drain(stop) // returns: the SDK has stopped reading
	p.answered([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	want()
	p.drain(nil) // returns: nothing pending
}
