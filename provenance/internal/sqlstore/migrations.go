package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// The schema, one version at a time, in each dialect; the two lists describe
// the same tables version for version. Add a version by appending to both.
//
//  1. executions (the records) and owners (the open stores).
//  2. executions.packages: the package sets a run could import from.
//  3. executions.kind, tier and the session columns; owners.heartbeat_at;
//     sessions.
//  4. skills (registered over the API) and tokens.
//  5. skills.hash and skill_audit: who changed which skill version, when.
//  6. executions.codegen: how generated code was made (NULL for other kinds).
//  7. session_deltas: the deltas saved after a session's state; the state
//     moves out of sessions into session_states, since SQLite rewrites a
//     whole row, blob and all, to update any column of it.
//  8. sessions.tier: the trust tier of a session's turns.
//  9. executions.caller: who asked for the run (Record.Caller).
var (
	sqliteMigrations = []string{
		`CREATE TABLE IF NOT EXISTS owners (
			id         TEXT PRIMARY KEY,
			pid        INTEGER NOT NULL,
			host       TEXT NOT NULL,
			started_at TEXT NOT NULL
		);
		CREATE TABLE IF NOT EXISTS executions (
			execution_id      TEXT PRIMARY KEY,
			owner             TEXT NOT NULL,
			skill             TEXT NOT NULL,
			version           TEXT NOT NULL,
			actor_id          TEXT NOT NULL,
			actor_type        TEXT NOT NULL,
			approved          INTEGER NOT NULL,
			code_hash         TEXT NOT NULL,
			inputs_hash       TEXT NOT NULL,
			outputs_hash      TEXT NOT NULL,
			interpreter       TEXT NOT NULL, -- JSON {kind, version, sha256}
			limits            TEXT NOT NULL, -- JSON, as applied
			outcome           TEXT NOT NULL,
			error             TEXT NOT NULL,
			duration_ms       REAL NOT NULL,
			fuel_used         INTEGER NOT NULL,
			memory_peak_bytes INTEGER NOT NULL,
			host_calls        TEXT NOT NULL, -- JSON list
			host_calls_total  INTEGER NOT NULL,
			started_at        TEXT NOT NULL, -- UTC, fixed width, so text order is time order
			finished_at       TEXT
		);
		CREATE INDEX IF NOT EXISTS executions_by_time ON executions (started_at);
		CREATE INDEX IF NOT EXISTS executions_by_skill ON executions (skill, started_at);
		CREATE INDEX IF NOT EXISTS executions_running ON executions (owner) WHERE outcome = 'running';`,

		// Layout 1 databases may predate the owners table.
		`ALTER TABLE executions ADD COLUMN packages TEXT NOT NULL DEFAULT '[]';
		CREATE TABLE IF NOT EXISTS owners (id TEXT PRIMARY KEY, pid INTEGER NOT NULL, host TEXT NOT NULL, started_at TEXT NOT NULL);`,

		`ALTER TABLE executions ADD COLUMN kind TEXT NOT NULL DEFAULT 'skill';
		UPDATE executions SET kind = 'exec' WHERE skill = '';
		ALTER TABLE executions ADD COLUMN tier TEXT NOT NULL DEFAULT '';
		ALTER TABLE executions ADD COLUMN session_id TEXT NOT NULL DEFAULT '';
		ALTER TABLE executions ADD COLUMN turn INTEGER NOT NULL DEFAULT 0;
		ALTER TABLE executions ADD COLUMN state_before TEXT NOT NULL DEFAULT '';
		ALTER TABLE executions ADD COLUMN state_after TEXT NOT NULL DEFAULT '';
		CREATE INDEX executions_by_kind ON executions (kind, started_at);
		CREATE INDEX executions_by_session ON executions (session_id, turn) WHERE session_id <> '';
		ALTER TABLE owners ADD COLUMN heartbeat_at TEXT NOT NULL DEFAULT '';
		CREATE TABLE sessions (
			id         TEXT PRIMARY KEY,
			owner      TEXT NOT NULL,
			turn       INTEGER NOT NULL,
			state      BLOB NOT NULL,
			state_hash TEXT NOT NULL,
			size       INTEGER NOT NULL,
			created_at TEXT NOT NULL,
			updated_at TEXT NOT NULL
		);
		CREATE INDEX sessions_by_owner ON sessions (owner, updated_at);
		CREATE INDEX sessions_by_update ON sessions (updated_at);`,

		`CREATE TABLE skills (
			name          TEXT NOT NULL,
			version       TEXT NOT NULL,
			files         BLOB NOT NULL, -- JSON {file name: base64 bytes}
			disabled      INTEGER NOT NULL,
			registered_by TEXT NOT NULL,
			registered_at TEXT NOT NULL,
			PRIMARY KEY (name, version)
		);
		CREATE TABLE tokens (
			name       TEXT PRIMARY KEY,
			hash       TEXT NOT NULL UNIQUE,
			role       TEXT NOT NULL,
			max_tier   TEXT NOT NULL,
			created_at TEXT NOT NULL
		);`,

		`ALTER TABLE skills ADD COLUMN hash TEXT NOT NULL DEFAULT '';
		CREATE TABLE skill_audit (
			id      INTEGER PRIMARY KEY AUTOINCREMENT,
			at      TEXT NOT NULL,
			actor   TEXT NOT NULL,
			action  TEXT NOT NULL,
			skill   TEXT NOT NULL,
			version TEXT NOT NULL,
			hash    TEXT NOT NULL
		);
		CREATE INDEX skill_audit_by_skill ON skill_audit (skill, id);`,

		`ALTER TABLE executions ADD COLUMN codegen TEXT; -- JSON {attempts, validated, ...}`,

		`CREATE TABLE session_states (
			session_id TEXT PRIMARY KEY,
			state      BLOB NOT NULL
		);
		INSERT INTO session_states (session_id, state) SELECT id, state FROM sessions;
		ALTER TABLE sessions DROP COLUMN state;
		CREATE TABLE session_deltas (
			session_id TEXT NOT NULL,
			turn       INTEGER NOT NULL,
			delta      BLOB NOT NULL,
			PRIMARY KEY (session_id, turn)
		);`,

		`ALTER TABLE sessions ADD COLUMN tier TEXT NOT NULL DEFAULT '';`,

		`ALTER TABLE executions ADD COLUMN caller TEXT NOT NULL DEFAULT '';`,
	}

	postgresMigrations = []string{
		`CREATE TABLE owners (
			id         text PRIMARY KEY,
			pid        integer NOT NULL,
			host       text NOT NULL,
			started_at timestamptz NOT NULL
		);
		CREATE TABLE executions (
			execution_id      text PRIMARY KEY,
			owner             text NOT NULL,
			skill             text NOT NULL,
			version           text NOT NULL,
			actor_id          text NOT NULL,
			actor_type        text NOT NULL,
			approved          boolean NOT NULL,
			code_hash         text NOT NULL,
			inputs_hash       text NOT NULL,
			outputs_hash      text NOT NULL,
			interpreter       jsonb NOT NULL,
			limits            jsonb NOT NULL,
			outcome           text NOT NULL,
			error             text NOT NULL,
			duration_ms       double precision NOT NULL,
			fuel_used         bigint NOT NULL,
			memory_peak_bytes bigint NOT NULL,
			host_calls        jsonb NOT NULL,
			host_calls_total  integer NOT NULL,
			started_at        timestamptz NOT NULL,
			finished_at       timestamptz
		);
		CREATE INDEX executions_by_time ON executions (started_at);
		CREATE INDEX executions_by_skill ON executions (skill, started_at);
		CREATE INDEX executions_running ON executions (owner) WHERE outcome = 'running';`,

		`ALTER TABLE executions ADD COLUMN packages jsonb NOT NULL DEFAULT '[]';`,

		`ALTER TABLE executions ADD COLUMN kind text NOT NULL DEFAULT 'skill';
		UPDATE executions SET kind = 'exec' WHERE skill = '';
		ALTER TABLE executions ADD COLUMN tier text NOT NULL DEFAULT '';
		ALTER TABLE executions ADD COLUMN session_id text NOT NULL DEFAULT '';
		ALTER TABLE executions ADD COLUMN turn integer NOT NULL DEFAULT 0;
		ALTER TABLE executions ADD COLUMN state_before text NOT NULL DEFAULT '';
		ALTER TABLE executions ADD COLUMN state_after text NOT NULL DEFAULT '';
		CREATE INDEX executions_by_kind ON executions (kind, started_at);
		CREATE INDEX executions_by_session ON executions (session_id, turn) WHERE session_id <> '';
		ALTER TABLE owners ADD COLUMN heartbeat_at timestamptz NOT NULL DEFAULT now();
		CREATE TABLE sessions (
			id         text PRIMARY KEY,
			owner      text NOT NULL,
			turn       integer NOT NULL,
			state      bytea NOT NULL,
			state_hash text NOT NULL,
			size       bigint NOT NULL,
			created_at timestamptz NOT NULL,
			updated_at timestamptz NOT NULL
		);
		CREATE INDEX sessions_by_owner ON sessions (owner, updated_at);
		CREATE INDEX sessions_by_update ON sessions (updated_at);`,

		`CREATE TABLE skills (
			name          text NOT NULL,
			version       text NOT NULL,
			files         bytea NOT NULL,
			disabled      boolean NOT NULL,
			registered_by text NOT NULL,
			registered_at timestamptz NOT NULL,
			PRIMARY KEY (name, version)
		);
		CREATE TABLE tokens (
			name       text PRIMARY KEY,
			hash       text NOT NULL UNIQUE,
			role       text NOT NULL,
			max_tier   text NOT NULL,
			created_at timestamptz NOT NULL
		);`,

		`ALTER TABLE skills ADD COLUMN hash text NOT NULL DEFAULT '';
		CREATE TABLE skill_audit (
			id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
			at      timestamptz NOT NULL,
			actor   text NOT NULL,
			action  text NOT NULL,
			skill   text NOT NULL,
			version text NOT NULL,
			hash    text NOT NULL
		);
		CREATE INDEX skill_audit_by_skill ON skill_audit (skill, id);`,

		`ALTER TABLE executions ADD COLUMN codegen jsonb;`,

		`CREATE TABLE session_states (
			session_id text PRIMARY KEY,
			state      bytea NOT NULL
		);
		INSERT INTO session_states (session_id, state) SELECT id, state FROM sessions;
		ALTER TABLE sessions DROP COLUMN state;
		CREATE TABLE session_deltas (
			session_id text NOT NULL,
			turn       integer NOT NULL,
			delta      bytea NOT NULL,
			PRIMARY KEY (session_id, turn)
		);`,

		`ALTER TABLE sessions ADD COLUMN tier text NOT NULL DEFAULT '';`,

		`ALTER TABLE executions ADD COLUMN caller text NOT NULL DEFAULT '';`,
	}
)

// SQLite is the embedded dialect: the version is PRAGMA user_version, and an
// owner is dead when its process is (every owner is on this host, or on
// hosts that cannot see each other's processes: see Store.Recover).
var SQLite = &Dialect{
	Name:       "sqlite",
	Migrations: sqliteMigrations,
	version: func(ctx context.Context, db querier) (v int, err error) {
		err = db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
		return v, err
	},
	setVersion: func(ctx context.Context, tx *sql.Tx, v int) error {
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v))
		return err
	},
	text: true,
}

// PostgresLease is how long a replica sharing a PostgreSQL database may go
// without a heartbeat before the others judge it dead.
const PostgresLease = 30 * time.Second

// Postgres is the shared dialect: the version is a row of wasmpy_schema,
// migrations take an advisory lock, and an owner is also dead when its
// heartbeat is older than the lease.
var Postgres = &Dialect{
	Name:       "postgres",
	Migrations: postgresMigrations,
	version: func(ctx context.Context, db querier) (int, error) {
		var exists bool
		if err := db.QueryRowContext(ctx, "SELECT to_regclass('wasmpy_schema') IS NOT NULL").Scan(&exists); err != nil || !exists {
			return 0, err
		}
		var v int
		err := db.QueryRowContext(ctx, "SELECT version FROM wasmpy_schema").Scan(&v)
		return v, err
	},
	setVersion: func(ctx context.Context, tx *sql.Tx, v int) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS wasmpy_schema (version integer NOT NULL);
			DELETE FROM wasmpy_schema`)
		if err == nil {
			_, err = tx.ExecContext(ctx, "INSERT INTO wasmpy_schema (version) VALUES ($1)", v)
		}
		return err
	},
	lock:   "SELECT pg_advisory_lock(7305917)", // any constant: wasmpy's migrations
	unlock: "SELECT pg_advisory_unlock(7305917)",
	dollar: true,
	Lease:  PostgresLease,
}
