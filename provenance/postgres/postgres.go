// Package postgres is the provenance.Store that replicas share: a
// PostgreSQL database reached through github.com/jackc/pgx/v5.
//
//	st, err := postgres.Open(ctx, "postgres://wasmpy:secret@db:5432/wasmpy?sslmode=require")
//	defer st.Close()
//
// Opening migrates the schema (one replica at a time, under an advisory
// lock) and registers the process as an owner with a heartbeat. An owner is
// dead when its heartbeat is older than Lease (30s), or, on the same
// host, as soon as its process is gone; a dead owner's running records are
// marked interrupted by whichever replica notices first, and a live
// replica's records are never touched. A replica paused longer than the lease
// (a stopped VM) has its running records marked interrupted; when they do
// finish, they take their real outcome.
package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"

	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/internal/sqlstore"
)

// Store is an open PostgreSQL provenance database.
type Store struct {
	*sqlstore.Store
	where string
}

var _ provenance.Store = (*Store)(nil)

// Lease is how long a replica may go without a heartbeat (it sends one
// every third of that) before the others judge it dead.
const Lease = sqlstore.PostgresLease

// MaxConns bounds the connections one Store opens: a replica's concurrent
// runs each hold one for a moment at their start and end.
const MaxConns = 16

// Open connects to the database at addr (a postgres:// URL, with any of
// libpq's parameters), migrates its schema and recovers dead owners' runs.
func Open(ctx context.Context, addr string) (*Store, error) {
	where := redact(addr)
	if _, err := pgx.ParseConfig(addr); err != nil {
		return nil, fmt.Errorf("provenance: %s: %w", where, err)
	}
	db, err := sql.Open("pgx", addr)
	if err != nil {
		return nil, fmt.Errorf("provenance: %s: %w", where, err)
	}
	db.SetMaxOpenConns(MaxConns)
	db.SetMaxIdleConns(MaxConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("provenance: %s: cannot connect: %w", where, err)
	}
	st, err := sqlstore.Open(ctx, db, sqlstore.Postgres)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("provenance: %s: %w", where, err)
	}
	return &Store{Store: st, where: where}, nil
}

// Where is the database URL without its password, for logs.
func (s *Store) Where() string { return s.where }

func redact(addr string) string {
	u, err := url.Parse(addr)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
