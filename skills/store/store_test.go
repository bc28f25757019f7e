package store_test

import (
	"context"
	"database/sql"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/skills"
	"github.com/wasmpy/wasmpy/skills/store"
)

func open(t *testing.T, path string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), path)
	require.NoError(t, err)
	return st
}

func record(skill string, at time.Time) *skills.Record {
	return &skills.Record{ExecutionID: skills.NewID(), Skill: skill, Version: "1.0.0", ActorID: "alice", ActorType: "user",
		CodeHash: "c0de", InputsHash: "1a", Interpreter: wasmpy.InterpreterInfo{Kind: "wasmpy", Version: "3.13", SHA256: "abc"},
		Packages: []wasmpy.PackageSet{{Name: "sci.zip", SHA256: "5e7", Distributions: []string{"six 1.17.0"}}},
		Limits:   skills.LimitsInfo{TimeoutMS: 1000, MemoryBytes: 1 << 20}, Outcome: skills.OutcomeRunning, StartedAt: at,
		HostCalls: []wasmpy.HostCall{}}
}

func finish(t *testing.T, st *store.Store, r *skills.Record, outcome string, ms float64) {
	t.Helper()
	done := r.StartedAt.Add(time.Duration(ms * float64(time.Millisecond)))
	r.Outcome, r.DurationMS, r.FinishedAt, r.OutputsHash = outcome, ms, &done, "0ut"
	r.FuelUsed, r.MemoryPeakBytes, r.HostCallsTotal = 7, 1<<20, 1
	r.HostCalls = []wasmpy.HostCall{{Name: "submit_result", DurationMS: 0.1, OK: true}}
	require.NoError(t, st.Finish(context.Background(), r))
}

func TestStoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sub", "p.db")
	st := open(t, path)
	defer st.Close()
	at := time.Date(2025, 1, 2, 3, 4, 5, 6000, time.UTC)
	r := record("echo", at)
	require.NoError(t, st.Begin(ctx, r))
	got, err := st.Get(ctx, r.ExecutionID)
	require.NoError(t, err)
	require.Equal(t, skills.OutcomeRunning, got.Outcome)
	require.Nil(t, got.FinishedAt)
	finish(t, st, r, skills.OutcomeOK, 12.5)
	got, err = st.Get(ctx, r.ExecutionID)
	require.NoError(t, err)
	require.Equal(t, r, got)

	_, err = st.Get(ctx, skills.NewID())
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Error(t, st.Finish(ctx, record("x", at)), "finishing what never began")

	var mode string
	db, err := sql.Open("sqlite3", "file:"+path)
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.QueryRow("PRAGMA journal_mode").Scan(&mode))
	require.Equal(t, "wal", mode)
}

func TestStoreListAndStats(t *testing.T) {
	ctx := context.Background()
	st := open(t, filepath.Join(t.TempDir(), "p.db"))
	defer st.Close()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	add := func(skill, outcome string, ms float64, i int) {
		r := record(skill, t0.Add(time.Duration(i)*time.Minute))
		require.NoError(t, st.Begin(ctx, r))
		if outcome != skills.OutcomeRunning {
			finish(t, st, r, outcome, ms)
		}
	}
	for i := 1; i <= 20; i++ { // durations 1..20 ms, one in four fails
		outcome := skills.OutcomeOK
		if i%4 == 0 {
			outcome = string(wasmpy.KindException)
		}
		add("summarize", outcome, float64(i), i)
	}
	add("entities", skills.OutcomeOK, 5, 30)
	add("entities", skills.OutcomeInvalidOutput, 7, 31)
	add("entities", skills.OutcomeRunning, 0, 32)
	add("", skills.OutcomeOK, 3, 33)

	all, err := st.List(ctx, store.Filter{Limit: 100})
	require.NoError(t, err)
	require.Len(t, all, 24)
	require.Equal(t, "", all[0].Skill, "newest first")
	recent, err := st.List(ctx, store.Filter{})
	require.NoError(t, err)
	require.Len(t, recent, 24)
	sel, err := st.List(ctx, store.Filter{Skill: "summarize", Outcome: string(wasmpy.KindException), Limit: 2})
	require.NoError(t, err)
	require.Len(t, sel, 2)
	require.Equal(t, t0.Add(20*time.Minute), sel[0].StartedAt)
	raw, err := st.List(ctx, store.Filter{Skill: "-"})
	require.NoError(t, err)
	require.Len(t, raw, 1)
	since, err := st.List(ctx, store.Filter{Since: t0.Add(30 * time.Minute)})
	require.NoError(t, err)
	require.Len(t, since, 4)
	none, err := st.List(ctx, store.Filter{ActorID: "bob"})
	require.NoError(t, err)
	require.Empty(t, none)

	stats, err := st.Stats(ctx, store.Filter{})
	require.NoError(t, err)
	require.Equal(t, []store.SkillStats{
		{Skill: "", Total: 1, SuccessRate: 1, P50MS: 3, P95MS: 3, Outcomes: map[string]int{"ok": 1}},
		{Skill: "entities", Total: 3, SuccessRate: 0.5, P50MS: 5, P95MS: 7, Outcomes: map[string]int{"ok": 1, "invalid_output": 1, "running": 1}},
		{Skill: "summarize", Total: 20, SuccessRate: 0.75, P50MS: 10, P95MS: 19, Outcomes: map[string]int{"ok": 15, "exception": 5}},
	}, stats)
}

// A record left running by a process that died is marked interrupted when
// the store next opens; one left by a live store is not.
func TestStoreInterrupted(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p.db")

	live := open(t, path)
	running := record("spin", time.Now())
	require.NoError(t, live.Begin(ctx, running))

	other := open(t, path) // another Store while the first is alive
	require.Equal(t, 0, other.Interrupted())
	got, err := other.Get(ctx, running.ExecutionID)
	require.NoError(t, err)
	require.Equal(t, skills.OutcomeRunning, got.Outcome)
	require.NoError(t, other.Close())

	// Simulate a kill: the record's owner is a process that has exited.
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	db, err := sql.Open("sqlite3", "file:"+path+"?_pragma=busy_timeout(5000)")
	require.NoError(t, err)
	_, err = db.Exec("INSERT INTO owners (id, pid, host, started_at) SELECT 'dead', ?, host, started_at FROM owners LIMIT 1", dead.Process.Pid)
	require.NoError(t, err)
	orphan := record("spin", time.Now())
	require.NoError(t, live.Begin(ctx, orphan))
	_, err = db.Exec("UPDATE executions SET owner = 'dead' WHERE execution_id = ?", orphan.ExecutionID)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	reopened := open(t, path)
	defer reopened.Close()
	require.Equal(t, 1, reopened.Interrupted())
	got, err = reopened.Get(ctx, orphan.ExecutionID)
	require.NoError(t, err)
	require.Equal(t, skills.OutcomeInterrupted, got.Outcome)
	require.Contains(t, got.Error, "ended before the run finished")
	got, err = reopened.Get(ctx, running.ExecutionID)
	require.NoError(t, err)
	require.Equal(t, skills.OutcomeRunning, got.Outcome, "its store is still open")

	// Closing a store leaves nothing running behind it.
	require.NoError(t, live.Close())
	got, err = reopened.Get(ctx, running.ExecutionID)
	require.NoError(t, err)
	require.Equal(t, skills.OutcomeInterrupted, got.Outcome)
}

func TestStoreOpenErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := store.Open(context.Background(), dir) // a directory
	require.Error(t, err)
	path := filepath.Join(dir, "new.db")
	db, err := sql.Open("sqlite3", "file:"+path)
	require.NoError(t, err)
	_, err = db.Exec("PRAGMA user_version = 99")
	require.NoError(t, err)
	require.NoError(t, db.Close())
	_, err = store.Open(context.Background(), path)
	require.ErrorContains(t, err, "newer wasmpy")
}

// A database of layout 1 (before package sets) gets the packages column,
// and its records read back with none.
func TestStoreMigratesLayout1(t *testing.T) {
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
		PRAGMA user_version = 1;`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	st := open(t, path)
	defer st.Close()
	got, err := st.Get(ctx, "old")
	require.NoError(t, err)
	require.Equal(t, []wasmpy.PackageSet{}, got.Packages)
	r := record("new", time.Now().UTC())
	require.NoError(t, st.Begin(ctx, r))
	got, err = st.Get(ctx, r.ExecutionID)
	require.NoError(t, err)
	require.Equal(t, r.Packages, got.Packages)
}
