//go:build linux

package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/internal/testing/pgtest"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/postgres"
	"github.com/wasmpy/wasmpy/provenance/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// fakeReplica stands in for a `wasmpy serve` replica on a real local HTTP
// server, recording in a real PostgreSQL store as a replica does: every run
// (POST /exec, a skill, a session's turn) gets its finished record, and a
// session's turns chain their states. It answers the request numbered fail
// with a 500, and leaves the run numbered lose unrecorded.
type fakeReplica struct {
	t          *testing.T
	st         provenance.Store
	fail, lose int

	mu       sync.Mutex
	requests int
	runs     int
	lost     string         // the execution id of the run left unrecorded
	sessions map[string]int // id -> turns kept
}

func (f *fakeReplica) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	w.Header().Set("Content-Type", "application/json")
	if r.Header.Get("Authorization") != "Bearer "+token || r.Method != http.MethodPost {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if f.requests == f.fail {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error": {"code": "internal", "message": "the store is down"}}`)
		return
	}
	if r.URL.Path == "/sessions" {
		id := provenance.NewID()
		f.sessions[id] = 0
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"session_id": %q}`, id)
		return
	}
	rec := storetest.Record(provenance.KindExec, "", time.Now())
	var session string
	if id, ok := strings.CutPrefix(r.URL.Path, "/sessions/"); ok {
		session = strings.TrimSuffix(id, "/exec")
		turn := f.sessions[session] + 1
		f.sessions[session] = turn
		rec.Kind, rec.SessionID, rec.Turn = provenance.KindSession, session, turn
		rec.StateBefore, rec.StateAfter = fmt.Sprintf("%s-%d", session, turn-1), fmt.Sprintf("%s-%d", session, turn)
	}
	f.runs++
	if f.runs == f.lose {
		f.lost = rec.ExecutionID
	} else {
		ctx := context.Background()
		err := f.st.Begin(ctx, rec)
		if err == nil {
			done := time.Now()
			rec.Outcome, rec.FinishedAt = provenance.OutcomeOK, &done
			err = f.st.Finish(ctx, rec)
		}
		if err != nil {
			f.t.Errorf("recording %s: %v", rec.ExecutionID, err) // not FailNow: this is the server's goroutine
		}
	}
	w.Header().Set("X-Execution-Id", rec.ExecutionID)
	fmt.Fprintf(w, `{"output": %d, "provenance": {"execution_id": %q, "session_id": %q, "turn": %d}}`, rec.Turn, rec.ExecutionID, session, rec.Turn)
}

// The cluster test's verdicts over what its load saw through a real HTTP
// server and what a real PostgreSQL store holds: a 5xx in a phase where no
// replica was made to fail fails it, and so does a 2xx answer whose run
// has no record; when every answer is 2xx and recorded, both pass.
func TestChecksCatchA5xxAndALostRecord(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fail, lose int
		phase      string // judgePhase's error, "" for none
		check      string // check's error, "" for none
	}{
		{name: "all well"},
		{name: "a 5xx", fail: 7, phase: "load: errors without any replica failing: map[500:1]"},
		{name: "a lost record", lose: 5, check: "the 2xx answer %s has no record: provenance: not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			url := pgtest.NewDatabase(t)
			st, err := postgres.Open(ctx, url)
			require.NoError(t, err)
			replica := &fakeReplica{t: t, st: st, fail: tc.fail, lose: tc.lose, sessions: map[string]int{}}
			srv := httptest.NewServer(replica)
			defer srv.Close()

			ss := newSessions(3)
			lctx, cancel := context.WithCancel(ctx)
			go func() {
				// enough requests for every worker's session to take turns
				for {
					replica.mu.Lock()
					n := replica.requests
					replica.mu.Unlock()
					if n >= 40 {
						cancel()
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
			}()
			start := time.Now()
			as, err := load(lctx, srv.URL, ss)
			require.NoError(t, err)
			final, err := ss.finalTurns(ctx, srv.URL)
			require.NoError(t, err)
			as = append(as, final...)
			f := summarise("load", 1, time.Since(start), as)
			t.Log(f)

			err = judgePhase(f, as, false)
			if tc.phase == "" {
				require.NoError(t, err)
			} else {
				require.EqualError(t, err, tc.phase)
				require.NoError(t, judgePhase(f, as, true), "a phase that kills a replica allows its errors")
			}

			srv.Close()
			require.NoError(t, st.Close())
			err = check(ctx, url, as, ss, "", nil)
			if tc.check == "" {
				require.NoError(t, err)
				return
			}
			require.NotEmpty(t, replica.lost)
			require.EqualError(t, err, fmt.Sprintf(tc.check, replica.lost))
		})
	}
}
