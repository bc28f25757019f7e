package postgres_test

import (
	"context"
	"database/sql"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/internal/testing/pgtest"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/internal/sqlstore"
	"github.com/wasmpy/wasmpy/provenance/postgres"
	"github.com/wasmpy/wasmpy/provenance/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) string { return pgtest.NewDatabase(t) },
		Open: func(ctx context.Context, addr string) (provenance.Store, error) {
			return postgres.Open(ctx, addr)
		},
	})
}

func open(t *testing.T, addr string) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), addr)
	require.NoError(t, err)
	return st
}

// Replicas on other hosts are judged by their heartbeat: one whose lease ran
// out is dead and its running records are interrupted; one that beats is
// alive and its records are left alone, whatever its pid says.
func TestRecoveryPerReplica(t *testing.T) {
	ctx := context.Background()
	addr := pgtest.NewDatabase(t)
	st := open(t, addr)
	defer st.Close()
	db, err := sql.Open("pgx", addr)
	require.NoError(t, err)
	defer db.Close()

	replica := func(id string, beat time.Duration) *provenance.Record {
		_, err := db.Exec(`INSERT INTO owners (id, pid, host, started_at, heartbeat_at)
			VALUES ($1, 1, 'another-host', now(), now() - $2 * interval '1 second')`, id, beat.Seconds())
		require.NoError(t, err)
		r := storetest.Record(provenance.KindExec, "", time.Now().UTC().Truncate(time.Microsecond))
		require.NoError(t, st.Begin(ctx, r))
		_, err = db.Exec("UPDATE executions SET owner = $1 WHERE execution_id = $2", id, r.ExecutionID)
		require.NoError(t, err)
		return r
	}
	dead := replica("dead-replica", postgres.Lease+time.Minute)
	alive := replica("live-replica", 0)
	mine := storetest.Record(provenance.KindExec, "", time.Now().UTC().Truncate(time.Microsecond))
	require.NoError(t, st.Begin(ctx, mine))

	n, err := st.Recover(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	for id, want := range map[string]string{dead.ExecutionID: provenance.OutcomeInterrupted,
		alive.ExecutionID: provenance.OutcomeRunning, mine.ExecutionID: provenance.OutcomeRunning} {
		got, err := st.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, want, got.Outcome, id)
	}
	var owners int
	require.NoError(t, db.QueryRow("SELECT count(*) FROM owners WHERE id = 'dead-replica'").Scan(&owners))
	require.Zero(t, owners, "the dead owner is forgotten")

	// An interrupted run that does finish (its replica was only paused)
	// takes its real outcome.
	done := time.Now().UTC().Truncate(time.Microsecond)
	dead.Outcome, dead.FinishedAt = provenance.OutcomeOK, &done
	require.NoError(t, st.Finish(ctx, dead))
	got, err := st.Get(ctx, dead.ExecutionID)
	require.NoError(t, err)
	require.Equal(t, provenance.OutcomeOK, got.Outcome)
}

// Replicas starting together on an empty database migrate it once.
func TestConcurrentMigration(t *testing.T) {
	addr := pgtest.NewDatabase(t)
	var wg sync.WaitGroup
	stores := make([]*postgres.Store, 6)
	errs := make([]error, len(stores))
	for i := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = postgres.Open(context.Background(), addr)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err)
		require.NoError(t, stores[i].Close())
	}
	db, err := sql.Open("pgx", addr)
	require.NoError(t, err)
	defer db.Close()
	var versions []int
	rows, err := db.Query("SELECT version FROM wasmpy_schema")
	require.NoError(t, err)
	for rows.Next() {
		var v int
		require.NoError(t, rows.Scan(&v))
		versions = append(versions, v)
	}
	require.Equal(t, []int{len(sqlstore.Postgres.Migrations)}, versions, "the newest version, written once")

	_, err = db.Exec("UPDATE wasmpy_schema SET version = 99")
	require.NoError(t, err)
	_, err = postgres.Open(context.Background(), addr)
	require.ErrorContains(t, err, "newer wasmpy (version 99")
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	_, err := postgres.Open(ctx, "postgres://u:hunter2@/db?host=/nonexistent-wasmpy-dir&connect_timeout=5")
	require.ErrorContains(t, err, "cannot connect")
	require.NotContains(t, err.Error(), "hunter2", "the password stays out of errors")
	_, err = postgres.Open(ctx, "postgres://u@h/db?sslmode=bogus&password=hunter2")
	require.Error(t, err)
	require.NotContains(t, err.Error(), "hunter2")
}
