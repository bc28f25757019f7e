package skills_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/stores"
	"github.com/wasmpy/wasmpy/skills"
)

// orderedStore logs when a turn's record is finished and when its session
// is saved, and can make the save lose a race (as to another replica).
type orderedStore struct {
	provenance.Store
	mu       sync.Mutex
	log      []string
	conflict bool
}

func (s *orderedStore) Finish(ctx context.Context, rec *provenance.Record) error {
	s.mu.Lock()
	s.log = append(s.log, "finish")
	s.mu.Unlock()
	return s.Store.Finish(ctx, rec)
}

func (s *orderedStore) UpdateSession(ctx context.Context, sess *provenance.Session, prevTurn int) error {
	s.mu.Lock()
	s.log = append(s.log, "save")
	conflict := s.conflict
	s.mu.Unlock()
	if conflict {
		return provenance.ErrConflict
	}
	return s.Store.UpdateSession(ctx, sess, prevTurn)
}

// A turn's session is saved before its record is finished, so a process
// that dies between the two never leaves an ok record for a turn the store
// did not keep (regression: the record was finished first, and the cluster
// test found two ok records for one turn after a SIGKILL); a turn that
// loses the save to another replica is recorded internal, not ok.
func TestSessionTurnRecordedAfterSave(t *testing.T) {
	ctx := context.Background()
	base, err := stores.Open(ctx, filepath.Join(t.TempDir(), "provenance.db"))
	require.NoError(t, err)
	defer base.Close()
	st := &orderedStore{Store: base}
	ex, err := skills.NewExecutor(ctx, skills.ExecutorConfig{
		Sandbox: wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER")}, Store: st, Sessions: st})
	require.NoError(t, err)
	defer ex.Close(ctx)

	in, err := ex.NewSession(ctx, "")
	require.NoError(t, err)
	x, err := ex.SessionExec(ctx, in.ID, "", skills.ExecRequest{Code: "x = 1"})
	require.NoError(t, err)
	require.Equal(t, []string{"save", "finish"}, st.log)
	rec, err := base.Get(ctx, x.Record.ExecutionID)
	require.NoError(t, err)
	require.Equal(t, provenance.OutcomeOK, rec.Outcome)

	st.conflict = true
	_, err = ex.SessionExec(ctx, in.ID, "", skills.ExecRequest{Code: "x = 2"})
	require.ErrorIs(t, err, skills.ErrSessionConflict)
	recs, err := base.List(ctx, provenance.Filter{SessionID: in.ID})
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.Equal(t, 2, recs[0].Turn) // newest first
	require.Equal(t, provenance.OutcomeInternal, recs[0].Outcome, "a turn not kept is not recorded ok")
	require.Contains(t, recs[0].Error, "not kept")
	saved, err := base.GetSession(ctx, in.ID)
	require.NoError(t, err)
	require.Equal(t, 1, saved.Turn)
}
