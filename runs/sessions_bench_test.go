package runs_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/stores"
	"github.com/wasmpy/wasmpy/runs"
)

// countingStore counts the session state bytes written to and read from
// the store.
type countingStore struct {
	provenance.Store
	written, read atomic.Int64
}

func (s *countingStore) CreateSession(ctx context.Context, sess *provenance.Session) error {
	s.written.Add(int64(len(sess.State)))
	return s.Store.CreateSession(ctx, sess)
}

func (s *countingStore) UpdateSession(ctx context.Context, sess *provenance.Session, prevTurn int) error {
	s.written.Add(int64(len(sess.State)))
	return s.Store.UpdateSession(ctx, sess, prevTurn)
}

func (s *countingStore) AppendSession(ctx context.Context, sess *provenance.Session, delta []byte, prevTurn int) error {
	s.written.Add(int64(len(delta)))
	return s.Store.AppendSession(ctx, sess, delta, prevTurn)
}

func (s *countingStore) SessionDeltas(ctx context.Context, id string, afterTurn int) ([][]byte, error) {
	deltas, err := s.Store.SessionDeltas(ctx, id, afterTurn)
	for _, d := range deltas {
		s.read.Add(int64(len(d)))
	}
	return deltas, err
}

func (s *countingStore) GetSession(ctx context.Context, id string) (*provenance.Session, error) {
	sess, err := s.Store.GetSession(ctx, id)
	if err == nil {
		s.read.Add(int64(len(sess.State)))
		for _, d := range sess.Deltas {
			s.read.Add(int64(len(d)))
		}
	}
	return sess, err
}

// BenchmarkSessionExecStore is a session turn as the HTTP service takes
// it: through the Executor, recorded and saved to a SQLite store. It
// reports the p50 and the state bytes written to and read from the store
// per turn, for a small state and one holding a list of about 50 MB. Every
// 64 turns, or when the deltas outweigh it, a turn saves the session whole
// again (runs.maxDeltas).
//
//	go test -run '^$' -bench SessionExecStore -benchtime 20x ./runs
func BenchmarkSessionExecStore(b *testing.B) {
	for _, c := range []struct{ name, setup string }{
		{"small", "x = 0\nimport json\ndef f(v): return json.dumps(v)"},
		{"list-50MB", "x = 0\nbig = [i * 7 for i in range(1_400_000)]"},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			base, err := stores.Open(ctx, filepath.Join(b.TempDir(), "provenance.db"))
			require.NoError(b, err)
			defer base.Close()
			st := &countingStore{Store: base}
			ex, err := runs.NewExecutor(ctx, runs.ExecutorConfig{
				Sandbox: wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER")}, Store: st, Sessions: st})
			require.NoError(b, err)
			defer ex.Close(ctx)
			in, err := ex.NewSession(ctx, runs.Caller{}, "")
			require.NoError(b, err)
			// The setup turn, and one more: its delta outweighs the new
			// session's save, so it saves the session whole.
			for _, code := range []string{c.setup, "x += 1"} {
				_, err = ex.SessionExec(ctx, in.ID, runs.ExecRequest{Code: code})
				require.NoError(b, err)
			}
			st.written.Store(0)
			st.read.Store(0)
			var times []time.Duration
			for b.Loop() {
				start := time.Now()
				x, err := ex.SessionExec(ctx, in.ID, runs.ExecRequest{Code: "x += 1"})
				times = append(times, time.Since(start))
				require.NoError(b, err)
				require.Nil(b, x.Result.Error)
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2])/1e6, "p50-ms")
			b.ReportMetric(float64(st.written.Load())/float64(len(times)), "written-B/turn")
			b.ReportMetric(float64(st.read.Load())/float64(len(times)), "read-B/turn")
		})
	}
}
