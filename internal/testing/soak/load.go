package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"time"
)

// A class is one kind of request in the mix, and the answers it may get.
type class struct {
	name   string
	weight int
	build  func(r *rand.Rand, c *client) (method, path, body string, header map[string]string)
	want   []int  // the statuses it may get
	code   string // the error code of a refused or failed request
	kind   string // the run's error kind, for the bombs
	guest  bool   // a 5xx is the guest's own failure (a bomb, an exception)
	burst  int    // sent as this many requests at once (a flood)
	cancel time.Duration
}

// classes is the mix: good requests, bad ones, floods, bombs, and callers
// that give up. Weights are relative.
var classes = []class{
	{name: "summarize", weight: 20, want: []int{200}, build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		return "POST", "/skills/text_summarize/execute", args(map[string]any{"text": prose(r, 1+r.IntN(40)), "max_sentences": 1 + r.IntN(5),
			"style": []string{"concise", "detailed", "bullet-points"}[r.IntN(3)]}, "soak", "agent"), nil
	}},
	{name: "summarize-100KiB", weight: 1, want: []int{200}, build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		return "POST", "/skills/text_summarize/execute", args(map[string]any{"text": prose(r, 1500)}, "soak", "agent"), nil
	}},
	{name: "extract", weight: 15, want: []int{200}, build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		text := prose(r, 1+r.IntN(10)) + " Write to Dr. Ada Lovelace at ada@example.com before 2025-03-01, or call +44 20 7946 0958; Acme Corp owes $1,200.50."
		return "POST", "/skills/extract_entities/execute", args(map[string]any{"text": text, "min_confidence": r.Float64()}, "soak", "agent"), nil
	}},
	{name: "exec", weight: 10, want: []int{200}, build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		return "POST", "/exec", execBody(fmt.Sprintf("import sys\nprint(sys.argv[1])\nsubmit_result(sum(range(%d)))", r.IntN(100000)), map[string]any{}, "a"), nil
	}},
	{name: "lookup", weight: 5, want: []int{200}, build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		if id := c.someID(r); id != "" {
			return "GET", "/executions/" + id, "", nil
		}
		return "GET", "/skills", "", nil
	}},
	{name: "read-only", weight: 3, want: []int{200}, build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		return "GET", []string{"/health", "/skills", "/skills/extract_entities/schema", "/metrics"}[r.IntN(4)], "", nil
	}},
	{name: "bad-json", weight: 5, want: []int{400}, code: "bad_request", build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		body := args(map[string]any{"text": prose(r, 3)}, "soak", "agent")
		return "POST", "/skills/text_summarize/execute", body[:r.IntN(len(body)-1)], nil
	}},
	{name: "unknown-field", weight: 3, want: []int{400}, code: "bad_request", build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		return "POST", "/skills/text_summarize/execute", `{"arguments": {"text": "x"}}`, nil
	}},
	{name: "schema-violation", weight: 8, want: []int{422}, code: "invalid_input", build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		bad := []map[string]any{{"text": 5}, {"text": "x", "max_sentences": 0}, {"text": ""}, {"text": "x", "style": "haiku"},
			{"text": "x", "extra": true}, {}}[r.IntN(6)]
		return "POST", "/skills/text_summarize/execute", args(bad, "soak", "agent"), nil
	}},
	{name: "unknown-skill", weight: 2, want: []int{404}, code: "unknown_skill", build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		return "POST", "/skills/nope/execute", `{}`, nil
	}},
	{name: "no-token", weight: 3, want: []int{401}, code: "unauthorized", build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		return "POST", "/skills/text_summarize/execute", args(map[string]any{"text": "x"}, "", ""), map[string]string{"Authorization": ""}
	}},
	{name: "wrong-token", weight: 3, want: []int{401}, code: "unauthorized", build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		return "GET", "/executions/" + c.someID(r), "", map[string]string{"Authorization": "Bearer " + c.token[:len(c.token)-1]}
	}},
	{name: "body-2MiB", weight: 1, want: []int{413}, code: "body_too_large", build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		return "POST", "/skills/text_summarize/execute", args(map[string]any{"text": strings.Repeat("Big. ", 400<<10)}, "", ""), nil
	}},
	{name: "deep-json", weight: 1, want: []int{400, 422}, build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		n := 1000 + r.IntN(200000)
		return "POST", "/skills/text_summarize/execute", `{"args": {"text": "x", "d": ` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}}`, nil
	}},
	{name: "memory-bomb", weight: 3, want: []int{502}, code: "run_failed", kind: "memory", guest: true, build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		code := []string{"b = bytearray(1 << 30)", "x = []\nwhile True:\n    x.append(' ' * 65536)", "s = 'ab' * (1 << 28)"}[r.IntN(3)]
		return "POST", "/exec", execBody(code, map[string]any{"memory_bytes": 48 << 20}), nil
	}},
	{name: "time-bomb", weight: 2, want: []int{504}, code: "timeout", kind: "timeout", guest: true, build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		code := []string{"while True: pass", "import re\nre.match(r'(a+)+$', 'a' * 40 + '!')", "import time\ntime.sleep(60)"}[r.IntN(3)]
		return "POST", "/exec", execBody(code, map[string]any{"timeout_ms": 200 + r.IntN(300)}), nil
	}},
	{name: "fuel-bomb", weight: 2, want: []int{502}, code: "run_failed", kind: "fuel", guest: true, build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		return "POST", "/exec", execBody("n = 0\nwhile True: n += 1", map[string]any{"fuel": 1_000_000 + r.IntN(10_000_000)}), nil
	}},
	{name: "output-bomb", weight: 1, want: []int{502}, code: "run_failed", kind: "output", guest: true, build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		return "POST", "/exec", execBody("while True: print('x' * 4096)", map[string]any{}), nil
	}},
	{name: "exception", weight: 2, want: []int{502}, code: "run_failed", kind: "exception", guest: true, build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		return "POST", "/exec", execBody("raise ValueError('soak')", map[string]any{}), nil
	}},
	{name: "flood", weight: 1, burst: 24, want: []int{200, 429}, build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		return "POST", "/skills/text_summarize/execute", args(map[string]any{"text": prose(r, 20)}, "flood", "agent"), nil
	}},
	{name: "client-gone", weight: 1, cancel: 150 * time.Millisecond, want: []int{504}, guest: true, build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		return "POST", "/exec", execBody("while True: pass", map[string]any{"timeout_ms": 1500}), nil
	}},
	// What the security review of issue 11 broke: each must be refused
	// before running.
	{name: "fuel-overflow", weight: 1, want: []int{400}, code: "bad_request", build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		return "POST", "/exec", `{"code": "print(1)", "limits": {"fuel": 18446744073709551615}}`, nil
	}},
	{name: "lone-surrogate", weight: 1, want: []int{400, 422}, build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		return "POST", "/skills/text_summarize/execute", `{"args": {"text": "a\ud800b"}}`, nil
	}},
	{name: "control-actor", weight: 1, want: []int{400, 422}, build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		return "POST", "/skills/text_summarize/execute", args(map[string]any{"text": "x"}, "evil\u001b]0;PWNED\u0007\nFAKE LINE", "agent"), nil
	}},
	{name: "text-plain", weight: 1, want: []int{415}, build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		return "POST", "/skills/text_summarize/execute", args(map[string]any{"text": "x"}, "", ""), map[string]string{"Content-Type": "text/plain"}
	}},
	{name: "cross-origin", weight: 1, want: []int{403}, build: func(r *rand.Rand, c *client) (string, string, string, map[string]string) {
		return "POST", "/exec", execBody("print(1)", map[string]any{}), map[string]string{"Origin": "https://evil.example"}
	}},
}

// pick draws a class by weight.
func pick(r *rand.Rand) *class {
	total := 0
	for _, c := range classes {
		total += c.weight
	}
	n := r.IntN(total)
	for i := range classes {
		if n -= classes[i].weight; n < 0 {
			return &classes[i]
		}
	}
	panic("unreachable")
}

func (c *class) allows(status int) bool { return slices.Contains(c.want, status) }

var words = strings.Fields(`cats purr sleep dogs bark play the river runs past old mills while engineers
measure load and latency under noisy neighbours; sandboxes hold, records persist, and memory stays flat`)

// prose is n random sentences.
func prose(r *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		k := 3 + r.IntN(12)
		for j := range k {
			w := words[r.IntN(len(words))]
			if j == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			} else {
				b.WriteByte(' ')
			}
			b.WriteString(w)
		}
		b.WriteString(". ")
	}
	return b.String()
}

func args(a map[string]any, actorID, actorType string) string {
	return mustJSON(map[string]any{"args": a, "actor_id": actorID, "actor_type": actorType})
}

func execBody(code string, limits map[string]any, argv ...string) string {
	return mustJSON(map[string]any{"code": code, "limits": limits, "args": append([]string{}, argv...), "actor_id": "soak", "actor_type": "test"})
}

func mustJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return b.String()
}

// newRequest builds one request, with the token unless the class overrides
// the Authorization header.
func (c *client) newRequest(method, path, body string, header map[string]string) (*http.Request, error) {
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return req, nil
}
