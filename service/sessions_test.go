package service_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/stores"
	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/service"
)

// sessionServer is a service with tokens whose sessions are kept in the
// store at db, as `wasmpy serve --enable-exec --db` runs it.
func sessionServer(t *testing.T, db string, lim wasmpy.SessionLimits) (*server, func()) {
	t.Helper()
	_, reg, _ := fixtures(t)
	ctx := context.Background()
	st, err := stores.Open(ctx, db)
	require.NoError(t, err)
	ex, err := runs.NewExecutor(ctx, runs.ExecutorConfig{
		Sandbox: wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER"), Engine: os.Getenv("WASMPY_ENGINE"), Sessions: lim}, Store: st, Sessions: st})
	require.NoError(t, err)
	svc, err := service.New(service.Config{Registry: reg, Executor: ex, EnableExec: true, Tokens: []string{"alice", "bob"},
		Logger: slog.New(slog.DiscardHandler), ExecLimits: wasmpy.Limits{Timeout: 5 * time.Second, Memory: 128 << 20}})
	require.NoError(t, err)
	srv := httptest.NewServer(svc.Handler())
	stop := func() {
		srv.Close()
		ex.Close(ctx)
		st.Close()
	}
	return &server{Server: srv, store: st}, stop
}

func TestSessionsEndpoints(t *testing.T) {
	db := filepath.Join(t.TempDir(), "provenance.db")
	s, stop := sessionServer(t, db, wasmpy.SessionLimits{})
	alice, bob := []string{"Authorization", "Bearer alice"}, []string{"Authorization", "Bearer bob"}

	r := s.do(t, "POST", "/sessions", "", alice...)
	require.Equal(t, 201, r.status, r.raw)
	id := r.body["session_id"].(string)
	require.True(t, provenance.ValidID(id))
	before := r.body["state_hash"].(string)

	r = s.do(t, "POST", "/sessions/"+id+"/exec", `{"code": "import json\nx = 41\nwrite_file('a.txt', 'kept')"}`, alice...)
	require.Equal(t, 200, r.status, r.raw)
	prov := r.body["provenance"].(map[string]any)
	require.Equal(t, "session", prov["kind"])
	require.Equal(t, id, prov["session_id"])
	require.EqualValues(t, 1, prov["turn"])
	require.Equal(t, before, prov["state_before"])
	after := prov["state_after"].(string)
	require.NotEqual(t, before, after)

	// A failed turn is a 502 with the run; the session keeps what it did.
	r = s.do(t, "POST", "/sessions/"+id+"/exec", `{"code": "x += 1\n1/0"}`, alice...)
	require.Equal(t, 502, r.status, r.raw)
	require.Equal(t, "run_failed", r.errorCode())
	require.EqualValues(t, 2, r.body["provenance"].(map[string]any)["turn"])

	// Another token sees no such session, whatever it asks.
	for _, req := range [][2]string{{"GET", "/sessions/" + id}, {"POST", "/sessions/" + id + "/exec"}, {"POST", "/sessions/" + id + "/fork"}, {"DELETE", "/sessions/" + id}} {
		body := ""
		if strings.HasSuffix(req[1], "/exec") {
			body = `{"code": "print(x)"}`
		}
		r = s.do(t, req[0], req[1], body, bob...)
		require.Equal(t, 404, r.status, req)
		require.Equal(t, "unknown_session", r.errorCode())
	}
	r = s.do(t, "GET", "/sessions/not-a-session", "", alice...)
	require.Equal(t, 404, r.status)

	r = s.do(t, "POST", "/sessions/"+id+"/fork", "", alice...)
	require.Equal(t, 201, r.status, r.raw)
	fork := r.body["session_id"].(string)
	r = s.do(t, "POST", "/sessions/"+fork+"/exec", `{"code": "x = 'fork'"}`, alice...)
	require.Equal(t, 200, r.status, r.raw)

	// The service restarts: the sessions are in the store.
	stop()
	s, stop = sessionServer(t, db, wasmpy.SessionLimits{})
	defer stop()
	r = s.do(t, "GET", "/sessions/"+id, "", alice...)
	require.Equal(t, 200, r.status, r.raw)
	require.EqualValues(t, 2, r.body["turns"])
	r = s.do(t, "POST", "/sessions/"+id+"/exec", `{"code": "print(x, json.dumps(read_file('a.txt')))"}`, alice...)
	require.Equal(t, 200, r.status, r.raw)
	require.Equal(t, "42 \"kept\"\n", r.body["run"].(map[string]any)["stdout"])
	require.EqualValues(t, 3, r.body["provenance"].(map[string]any)["turn"])
	r = s.do(t, "POST", "/sessions/"+fork+"/exec", `{"code": "print(x)"}`, alice...)
	require.Equal(t, "fork\n", r.body["run"].(map[string]any)["stdout"])

	// Every turn is in the provenance record, with its states.
	recs, err := s.store.List(context.Background(), provenance.Filter{SessionID: id})
	require.NoError(t, err)
	require.Len(t, recs, 3)
	require.Equal(t, after, recs[len(recs)-1].StateAfter) // oldest last
	require.Equal(t, recs[1].StateAfter, recs[0].StateBefore)

	r = s.do(t, "GET", "/metrics", "", alice...)
	require.Contains(t, r.raw, "wasmpy_sessions_open ")
	require.Contains(t, r.raw, "wasmpy_sessions_max 100")

	r = s.do(t, "DELETE", "/sessions/"+id, "", alice...)
	require.Equal(t, 204, r.status, r.raw)
	r = s.do(t, "GET", "/sessions/"+id, "", alice...)
	require.Equal(t, 404, r.status)
	_, err = s.store.GetSession(context.Background(), id)
	require.ErrorIs(t, err, provenance.ErrNotFound)
}

func TestSessionsNeedExec(t *testing.T) {
	s := startServer(t, nil)
	r := s.do(t, "POST", "/sessions", "")
	require.Equal(t, 404, r.status)
	require.Equal(t, "exec_disabled", r.errorCode())
}

// The limits hold for the store, which outlives the process: the most
// sessions it may hold, and the idle TTL.
func TestSessionsLimits(t *testing.T) {
	alice := []string{"Authorization", "Bearer alice"}
	t.Run("max", func(t *testing.T) {
		s, stop := sessionServer(t, filepath.Join(t.TempDir(), "provenance.db"), wasmpy.SessionLimits{Max: 2, IdleTTL: time.Hour})
		defer stop()
		first := s.do(t, "POST", "/sessions", "", alice...).body["session_id"].(string)
		require.Equal(t, 201, s.do(t, "POST", "/sessions/"+first+"/fork", "", alice...).status)
		r := s.do(t, "POST", "/sessions", "{}", alice...)
		require.Equal(t, 429, r.status, r.raw)
		require.Equal(t, "too_many_sessions", r.errorCode())
		require.Equal(t, 204, s.do(t, "DELETE", "/sessions/"+first, "", alice...).status)
		require.Equal(t, 201, s.do(t, "POST", "/sessions", "", alice...).status)
	})
	t.Run("idle TTL", func(t *testing.T) {
		s, stop := sessionServer(t, filepath.Join(t.TempDir(), "provenance.db"), wasmpy.SessionLimits{IdleTTL: 200 * time.Millisecond})
		defer stop()
		first := s.do(t, "POST", "/sessions", "", alice...).body["session_id"].(string)
		// Past the TTL (a lower bound: sleeping longer cannot make this
		// flaky), the next new session expires the idle one.
		time.Sleep(300 * time.Millisecond)
		r := s.do(t, "POST", "/sessions", "", alice...)
		require.Equal(t, 201, r.status, r.raw)
		require.Equal(t, 404, s.do(t, "GET", "/sessions/"+first, "", alice...).status)
		left, err := s.store.ListSessions(context.Background(), provenance.SessionFilter{})
		require.NoError(t, err)
		require.Len(t, left, 1)
	})
}

// Two replicas sharing a store take turns of one session alternately:
// each turn continues from the state the other left, though both have
// the session open in memory (regression: a replica ran the turn from its
// own older state, and lost it to a conflict).
func TestSessionsAcrossReplicas(t *testing.T) {
	db := filepath.Join(t.TempDir(), "provenance.db")
	a, stopA := sessionServer(t, db, wasmpy.SessionLimits{})
	defer stopA()
	b, stopB := sessionServer(t, db, wasmpy.SessionLimits{})
	defer stopB()
	alice := []string{"Authorization", "Bearer alice"}

	r := a.do(t, "POST", "/sessions", "", alice...)
	require.Equal(t, 201, r.status, r.raw)
	id := r.body["session_id"].(string)
	r = a.do(t, "POST", "/sessions/"+id+"/exec", `{"code": "xs = []"}`, alice...)
	require.Equal(t, 200, r.status, r.raw)
	for turn, s := range []*server{b, a, b, a} {
		r = s.do(t, "POST", "/sessions/"+id+"/exec", `{"code": "xs.append(1)\nsubmit_result(len(xs))"}`, alice...)
		require.Equal(t, 200, r.status, r.raw)
		require.EqualValues(t, turn+1, r.body["output"], r.raw)
		require.EqualValues(t, turn+2, r.body["provenance"].(map[string]any)["turn"])
	}
	for _, s := range []*server{a, b} {
		r = s.do(t, "GET", "/sessions/"+id, "", alice...)
		require.Equal(t, 200, r.status, r.raw)
		require.EqualValues(t, 5, r.body["turns"])
	}
	// Closed on one replica, it is gone on the other.
	r = b.do(t, "DELETE", "/sessions/"+id, "", alice...)
	require.Equal(t, 204, r.status, r.raw)
	r = a.do(t, "GET", "/sessions/"+id, "", alice...)
	require.Equal(t, 404, r.status, r.raw)
}
