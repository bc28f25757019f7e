package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/internal/sqlstore"
	"github.com/wasmpy/wasmpy/provenance/sqlite"
	"github.com/wasmpy/wasmpy/provenance/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) string { return filepath.Join(t.TempDir(), "sub", "p.db") },
		Open: func(ctx context.Context, addr string) (provenance.Store, error) {
			return sqlite.Open(ctx, addr)
		},
	})
}

func TestWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	st, err := sqlite.Open(context.Background(), path)
	require.NoError(t, err)
	defer st.Close()
	require.Equal(t, path, st.Where())
	db, err := sql.Open("sqlite3", "file:"+path)
	require.NoError(t, err)
	defer db.Close()
	var mode string
	require.NoError(t, db.QueryRow("PRAGMA journal_mode").Scan(&mode))
	require.Equal(t, "wal", mode)
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := sqlite.Open(context.Background(), dir) // a directory
	require.Error(t, err)
	path := filepath.Join(dir, "new.db")
	db, err := sql.Open("sqlite3", "file:"+path)
	require.NoError(t, err)
	_, err = db.Exec("PRAGMA user_version = 99")
	require.NoError(t, err)
	require.NoError(t, db.Close())
	_, err = sqlite.Open(context.Background(), path)
	require.ErrorContains(t, err, "newer wasmpy (version 99")
}

// A database of layout 1 (before package sets, kinds and sessions) is
// migrated: its records read back with no packages and the kind their skill
// implies, and the new tables work.
func TestMigratesLayout1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite3", "file:"+path+"?_pragma=journal_mode(wal)")
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `CREATE TABLE executions (execution_id TEXT PRIMARY KEY, owner TEXT NOT NULL, skill TEXT NOT NULL,
		version TEXT NOT NULL, actor_id TEXT NOT NULL, actor_type TEXT NOT NULL, approved INTEGER NOT NULL, code_hash TEXT NOT NULL,
		inputs_hash TEXT NOT NULL, outputs_hash TEXT NOT NULL, interpreter TEXT NOT NULL, limits TEXT NOT NULL, outcome TEXT NOT NULL,
		error TEXT NOT NULL, duration_ms REAL NOT NULL, fuel_used INTEGER NOT NULL, memory_peak_bytes INTEGER NOT NULL,
		host_calls TEXT NOT NULL, host_calls_total INTEGER NOT NULL, started_at TEXT NOT NULL, finished_at TEXT);
		INSERT INTO executions VALUES ('old', 'gone', 'echo', '1.0.0', 'a', 'user', 0, 'c', 'i', 'o',
		'{"kind":"wasmpy","version":"3.13","sha256":"abc"}', '{}', 'ok', '', 1, 1, 1, '[]', 0, '2025-01-02T03:04:05.000000000Z', NULL);
		INSERT INTO executions VALUES ('raw', 'gone', '', '', 'a', 'user', 0, 'c', 'i', 'o',
		'{"kind":"wasmpy","version":"3.13","sha256":"abc"}', '{}', 'running', '', 1, 1, 1, '[]', 0, '2025-01-02T03:04:06.000000000Z', NULL);
		PRAGMA user_version = 1;`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	st, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	defer st.Close()
	require.Equal(t, 1, st.Interrupted(), "the raw run's owner is gone")
	got, err := st.Get(ctx, "old")
	require.NoError(t, err)
	require.Equal(t, []provenance.PackageSet{}, got.Packages)
	require.Equal(t, provenance.KindSkill, got.Kind)
	got, err = st.Get(ctx, "raw")
	require.NoError(t, err)
	require.Equal(t, provenance.KindExec, got.Kind)
	require.Equal(t, provenance.OutcomeInterrupted, got.Outcome)
	r := storetest.Record(provenance.KindExec, "", time.Now().UTC().Truncate(time.Microsecond))
	require.NoError(t, st.Begin(ctx, r))
	got, err = st.Get(ctx, r.ExecutionID)
	require.NoError(t, err)
	require.Equal(t, r, got)
	require.NoError(t, st.CreateSession(ctx, &provenance.Session{ID: "s"}))
}

// A database whose sessions keep their state in their own row (layout 6)
// is migrated: the states move to session_states and read back whole.
func TestMigratesSessionStates(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite3", "file:"+path)
	require.NoError(t, err)
	for _, m := range sqlstore.SQLite.Migrations[:6] {
		_, err := db.Exec(m)
		require.NoError(t, err)
	}
	_, err = db.Exec(`INSERT INTO sessions (id, owner, turn, state, state_hash, size, created_at, updated_at)
		VALUES ('s1', 'team', 3, x'0102', 'h', 2, '2025-01-02T03:04:05.000000000Z', '2025-01-02T03:04:05.000000000Z');
		PRAGMA user_version = 6;`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	st, err := sqlite.Open(ctx, path)
	require.NoError(t, err)
	defer st.Close()
	got, err := st.GetSession(ctx, "s1")
	require.NoError(t, err)
	require.Equal(t, []byte{1, 2}, got.State)
	require.Equal(t, 3, got.Turn)
	require.NoError(t, st.AppendSession(ctx, &provenance.Session{ID: "s1", Turn: 4, StateHash: "h4"}, []byte{3}, 3))
	got, err = st.GetSession(ctx, "s1")
	require.NoError(t, err)
	require.Equal(t, [][]byte{{3}}, got.Deltas)
}
