package main

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/stores"
	"github.com/wasmpy/wasmpy/provenance/storetest"
)

// service stands in for `wasmpy serve` on a real local HTTP server: it
// answers POST /exec as serve does, recording each run in a real store,
// except that it answers the requests numbered in fail with a 500, and
// answers those in lose without recording them. A run whose code asks for
// a gigabyte fails as a guest's memory bomb does (502).
func service(t *testing.T, db string, fail, lose map[int64]bool) *httptest.Server {
	st, err := stores.Open(context.Background(), db)
	require.NoError(t, err)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		var in struct {
			Code string `json:"code"`
		}
		if r.Method != http.MethodPost || r.URL.Path != "/exec" || json.NewDecoder(r.Body).Decode(&in) != nil {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error": {"code": "bad_request", "message": "not what this test sends"}}`))
			return
		}
		if fail[i] {
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"error": {"code": "internal", "message": "the store is down"}}`))
			return
		}
		rec := storetest.Record(provenance.KindExec, "", time.Now())
		status, outcome, body := http.StatusOK, provenance.OutcomeOK, `"output": 1`
		if strings.Contains(in.Code, "1 << 30") || strings.Contains(in.Code, "while True") || strings.Contains(in.Code, "1 << 28") {
			status, outcome, body = http.StatusBadGateway, "memory", `"error": {"code": "run_failed", "kind": "memory", "message": "memory limit"}`
		}
		if !lose[i] {
			ctx := context.Background()
			err := st.Begin(ctx, rec)
			if err == nil {
				done := time.Now()
				rec.Outcome, rec.FinishedAt = outcome, &done
				err = st.Finish(ctx, rec)
			}
			if err != nil {
				t.Errorf("recording %s: %v", rec.ExecutionID, err) // not FailNow: this is the server's goroutine
			}
		}
		w.Header().Set("X-Execution-Id", rec.ExecutionID)
		w.WriteHeader(status)
		w.Write([]byte(`{` + body + `, "provenance": {"execution_id": "` + rec.ExecutionID + `", "outcome": "` + outcome + `"}}`))
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { st.Close() })
	return srv
}

func classNamed(t *testing.T, name string) *class {
	for i := range classes {
		if classes[i].name == name {
			return &classes[i]
		}
	}
	t.Fatalf("no class %s", name)
	return nil
}

// The soak's verdict over what it saw: its requests' answers from a real
// HTTP server, then the records in a real store. A 5xx that is not a
// guest's own failure fails it, and so does an answered run without its
// record; a guest's memory bomb (502) and every run recorded pass.
func TestVerdictCatchesA5xxAndALostRecord(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fail, lose map[int64]bool
		want       string // "" for a pass
	}{
		{name: "all well"},
		{name: "a 5xx", fail: map[int64]bool{3: true},
			want: `5xx ×1 (first: 5xx: exec /exec: 500 {"error": {"code": "internal", "message": "the store is down"}})`},
		{name: "a lost record", lose: map[int64]bool{2: true}, want: "lost record ×1, store ×1 (first: lost record: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "provenance.db")
			srv := service(t, db, tc.fail, tc.lose)
			c := &client{base: srv.URL, token: "t", http: srv.Client()}
			rep := newReport()
			r := rand.New(rand.NewPCG(1, 2))
			sent := []string{"exec", "exec", "exec", "memory-bomb", "exec"}
			for _, name := range sent {
				cl := classNamed(t, name)
				method, path, body, header := cl.build(r, c)
				req, err := c.newRequest(method, path, body, header)
				require.NoError(t, err)
				rep.send(c, cl, req)
			}
			srv.Close() // as the soak stops the server before it reads the store
			rep.checkStore(context.Background(), db)

			require.Equal(t, len(sent), rep.requests)
			require.Equal(t, len(sent)-len(tc.fail), rep.checked, "every answered run is looked up")
			require.Equal(t, len(tc.lose), rep.lost)
			err := rep.verdict()
			if tc.want == "" {
				require.NoError(t, err)
				require.Equal(t, 1, rep.byStatus[http.StatusBadGateway], "the memory bomb's 502 is the guest's own")
				require.Equal(t, len(sent), rep.storeTotal)
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			if len(tc.lose) > 0 {
				// the lost run is named by the id its answer gave
				var lostID string
				for id := range rep.outcomes {
					if strings.Contains(err.Error(), id) {
						lostID = id
					}
				}
				require.NotEmpty(t, lostID, err.Error())
				require.Contains(t, err.Error(), provenance.ErrNotFound.Error())
			}
		})
	}
}
