//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/wasmpy/wasmpy/provenance"
)

// turnCode appends to a list the session keeps, checks it holds 1..n
// (every kept turn appended once), and gives its length: after a kept turn
// it equals the session's turn count, so a 2xx answer shows the state the
// turn started from.
const turnCode = `xs = globals().setdefault("xs", [])
assert xs == list(range(1, len(xs) + 1)), xs
xs.append(len(xs) + 1)
submit_result(len(xs))`

// session is one session of the load, driven by one worker at a time
// through the balancer, so that any replica takes any of its turns.
type session struct {
	id        string
	committed int  // turns known to be kept
	unsure    bool // the last turn got no 2xx: it may or may not have been kept
}

// sessions are the load's sessions, one per worker, kept across phases.
type sessions struct {
	mu   sync.Mutex
	byID map[string]*session
	of   []*session // by worker
}

func newSessions(workers int) *sessions {
	return &sessions{byID: map[string]*session{}, of: make([]*session, workers)}
}

// turn takes worker w's session's next turn (opening the session first if
// it has none) and checks the answer against the state the session must
// have; a violation is returned as an error, the end of the test.
func (ss *sessions) turn(client *http.Client, base string, w int) (answer, error) {
	s := ss.of[w]
	if s == nil {
		a, body := call(client, "POST", base+"/sessions", "")
		a.class = "session-new"
		if a.status != http.StatusCreated {
			return a, nil // the session may exist, unused: no turn is at stake
		}
		var in struct {
			ID string `json:"session_id"`
		}
		if err := json.Unmarshal(body, &in); err != nil || in.ID == "" {
			return a, fmt.Errorf("POST /sessions answered %s", body)
		}
		s = &session{id: in.ID}
		ss.mu.Lock()
		ss.of[w], ss.byID[s.id] = s, s
		ss.mu.Unlock()
		return a, nil
	}
	a, body := call(client, "POST", base+"/sessions/"+s.id+"/exec", `{"code": `+quote(turnCode)+`, "actor_id": "load", "actor_type": "test"}`)
	a.class = "session"
	if strings.Contains(a.err, `"code":"run_failed"`) {
		return a, fmt.Errorf("session %s: after %d turns kept, a turn failed: %s", s.id, s.committed, a.err)
	}
	if a.status != http.StatusOK {
		s.unsure = true
		return a, nil
	}
	var out struct {
		Output     int `json:"output"`
		Provenance struct {
			SessionID string `json:"session_id"`
			Turn      int    `json:"turn"`
		} `json:"provenance"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return a, fmt.Errorf("session %s: a turn answered %s", s.id, body)
	}
	// After a turn without a 2xx, the session is at the turn before it or
	// past it, never anywhere else.
	want := []int{s.committed + 1}
	if s.unsure {
		want = append(want, s.committed+2)
	}
	if (out.Output != want[0] && (len(want) == 1 || out.Output != want[1])) || out.Provenance.Turn != out.Output || out.Provenance.SessionID != s.id {
		return a, fmt.Errorf("session %s: after %d turns kept (the last one unsure: %v), a turn answered list length %d, turn %d of session %q",
			s.id, s.committed, s.unsure, out.Output, out.Provenance.Turn, out.Provenance.SessionID)
	}
	s.committed, s.unsure = out.Output, false
	return a, nil
}

// finalTurns takes one more turn of every session once the killed replica
// is back: each must continue from the state it had kept.
func (ss *sessions) finalTurns(ctx context.Context, base string) ([]answer, error) {
	client := &http.Client{Timeout: 2 * time.Minute}
	var as []answer
	for w, s := range ss.of {
		if s == nil {
			continue
		}
		a, err := ss.turn(client, base, w)
		as = append(as, a)
		if err != nil {
			return as, err
		}
		if a.status != http.StatusOK {
			return as, fmt.Errorf("session %s: its turn after the restart answered %d: %s", s.id, a.status, a.err)
		}
	}
	return as, ctx.Err()
}

// check verifies the store's records of every session: one ok record per
// kept turn, 1 to the last, each starting from the state the turn before
// it left; none for a turn past the last kept; any other record
// interrupted (the killed replica's turns in flight, checked with the
// rest of its runs). A kept turn may have only an interrupted record: its
// replica was killed after saving the session and before recording the
// end (the service saves first, so an ok record is always a kept turn).
func (ss *sessions) check(ctx context.Context, st provenance.Store) (turns int, err error) {
	for _, s := range ss.byID {
		recs, err := st.List(ctx, provenance.Filter{SessionID: s.id, Limit: 100000})
		if err != nil {
			return 0, err
		}
		kept, interrupted := map[int]*provenance.Record{}, map[int]bool{}
		for _, r := range recs {
			switch {
			case r.Kind != provenance.KindSession || r.SessionID != s.id:
				return 0, fmt.Errorf("session %s: record %s is of kind %s, session %q", s.id, r.ExecutionID, r.Kind, r.SessionID)
			case r.Outcome == provenance.OutcomeInterrupted:
				interrupted[r.Turn] = true
			case r.Outcome != provenance.OutcomeOK:
				return 0, fmt.Errorf("session %s: turn %d (%s) is recorded %s", s.id, r.Turn, r.ExecutionID, r.Outcome)
			case r.Turn < 1 || r.Turn > s.committed:
				return 0, fmt.Errorf("session %s kept %d turns, but turn %d (%s) is recorded ok", s.id, s.committed, r.Turn, r.ExecutionID)
			case kept[r.Turn] != nil:
				return 0, fmt.Errorf("session %s: turn %d is recorded twice (%s, %s)", s.id, r.Turn, kept[r.Turn].ExecutionID, r.ExecutionID)
			default:
				kept[r.Turn] = r
			}
		}
		for t := 1; t <= s.committed; t++ {
			r := kept[t]
			if r == nil && interrupted[t] {
				continue // kept, and its replica killed before it recorded the end
			}
			if r == nil {
				return 0, fmt.Errorf("session %s kept %d turns, but turn %d has no record", s.id, s.committed, t)
			}
			if prev := kept[t-1]; prev != nil && prev.StateAfter != r.StateBefore {
				return 0, fmt.Errorf("session %s: turn %d started from state %s, not %s that turn %d left", s.id, t, r.StateBefore, prev.StateAfter, t-1)
			}
		}
		turns += s.committed
	}
	return turns, nil
}

// call sends one request with the token; the body is what came back.
func call(client *http.Client, method, url, body string) (answer, []byte) {
	var a answer
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		a.latency, a.err = time.Since(start), err.Error()
		return a, nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		a.err = strings.TrimSpace(string(b[:min(len(b), 160)]))
	}
	a.latency = time.Since(start)
	a.status, a.executionID = resp.StatusCode, resp.Header.Get("X-Execution-Id")
	return a, b
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(bytes.TrimSpace(b))
}
