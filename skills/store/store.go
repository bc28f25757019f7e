// Package store keeps skill provenance records in an embedded SQLite
// database (github.com/ncruces/go-sqlite3: SQLite in pure Go, no cgo).
//
//	st, err := store.Open(ctx, "") // the default file under the user's data dir
//	defer st.Close()
//	ex, err := skills.NewExecutor(ctx, skills.ExecutorConfig{Store: st})
//
// Crash safety: a record is written as "running" before its run starts and
// completed after. Every open Store registers its process as an owner; when
// a Store opens and finds records left running by an owner whose process is
// gone, it marks them "interrupted". The database is in WAL mode with
// synchronous=NORMAL, so a killed process loses nothing it committed (a
// power cut may lose the last commits, never consistency). Several processes
// on one host may share the file (a service and `wasmpy history`, say);
// SQLite's WAL needs them on the same host.
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	_ "github.com/ncruces/go-sqlite3/driver" // registers "sqlite3"

	"github.com/wasmpy/wasmpy/skills"
)

// ErrNotFound is returned by Get for an unknown execution id.
var ErrNotFound = skills.ErrNoRecord

// schemaVersion is the database layout this package writes (PRAGMA user_version).
// Layout 2 added executions.packages.
const schemaVersion = 2

const schema = `
CREATE TABLE IF NOT EXISTS owners (
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
	packages          TEXT NOT NULL DEFAULT '[]', -- JSON list of the package sets mounted: {name, sha256, distributions}
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
CREATE INDEX IF NOT EXISTS executions_running ON executions (owner) WHERE outcome = 'running';
`

// timeLayout is RFC 3339 in UTC with a fixed nine-digit fraction.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// Store is an open provenance database; it is safe for concurrent use and
// implements skills.Recorder.
type Store struct {
	db          *sql.DB
	path        string
	owner       string
	interrupted int
}

// openOwners are the owner ids of the Stores open in this process: an owner
// with this process's pid is alive only if it is listed here.
var openOwners sync.Map

// DefaultPath is where the database lives unless told otherwise:
// $XDG_DATA_HOME/wasmpy/provenance.db, else ~/.local/share/wasmpy/... on
// Unix; the user config dir (Application Support, AppData) on macOS and
// Windows.
func DefaultPath() (string, error) {
	dir := os.Getenv("XDG_DATA_HOME")
	if dir == "" {
		if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
			var err error
			if dir, err = os.UserConfigDir(); err != nil {
				return "", fmt.Errorf("store: no data dir: %w", err)
			}
		} else {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("store: no data dir: %w", err)
			}
			dir = filepath.Join(home, ".local", "share")
		}
	}
	return filepath.Join(dir, "wasmpy", "provenance.db"), nil
}

// Open opens (creating if need be) the database at path, "" meaning
// DefaultPath, and marks the records that dead processes left running as
// interrupted.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		var err error
		if path, err = DefaultPath(); err != nil {
			return nil, err
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	// Provenance is nobody else's business: create the file private.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	f.Close()
	q := url.Values{"_txlock": {"immediate"}, "_pragma": {
		"busy_timeout(10000)", "journal_mode(wal)", "synchronous(normal)",
	}}
	dsn := "file:" + (&url.URL{Path: filepath.ToSlash(abs)}).EscapedPath() + "?" + q.Encode()
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", path, err)
	}
	s := &Store{db: db, path: abs, owner: skills.NewID()}
	if err := s.init(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: %s: %w", path, err)
	}
	return s, nil
}

func (s *Store) init(ctx context.Context) error {
	var version int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return err
	}
	if version > schemaVersion {
		return fmt.Errorf("written by a newer wasmpy (layout %d, this one knows %d)", version, schemaVersion)
	}
	var mode string
	if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if mode != "wal" {
		return fmt.Errorf("journal mode is %q, want wal", mode)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if version < schemaVersion {
		if _, err := tx.ExecContext(ctx, schema); err != nil {
			return err
		}
		if version == 1 {
			if _, err := tx.ExecContext(ctx, "ALTER TABLE executions ADD COLUMN packages TEXT NOT NULL DEFAULT '[]'"); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
			return err
		}
	}
	if err := s.recover(ctx, tx); err != nil {
		return err
	}
	host, _ := os.Hostname()
	if _, err := tx.ExecContext(ctx, "INSERT INTO owners (id, pid, host, started_at) VALUES (?, ?, ?, ?)",
		s.owner, os.Getpid(), host, time.Now().UTC().Format(timeLayout)); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	openOwners.Store(s.owner, true)
	return nil
}

// interruptedReason is the error of a record found interrupted.
const interruptedReason = "the process running it ended before the run finished"

// recover forgets dead owners and marks their running records interrupted.
func (s *Store) recover(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, "SELECT id, pid, host FROM owners")
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	var dead []string
	for rows.Next() {
		var id, h string
		var pid int
		if err := rows.Scan(&id, &pid, &h); err != nil {
			rows.Close()
			return err
		}
		if h != host { // another host's processes cannot be checked
			continue
		}
		if pid == os.Getpid() {
			if _, open := openOwners.Load(id); !open {
				dead = append(dead, id)
			}
		} else if !processAlive(pid) {
			dead = append(dead, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range dead {
		if _, err := tx.ExecContext(ctx, "DELETE FROM owners WHERE id = ?", id); err != nil {
			return err
		}
	}
	res, err := tx.ExecContext(ctx, `UPDATE executions SET outcome = 'interrupted', error = ?
		WHERE outcome = 'running' AND owner NOT IN (SELECT id FROM owners)`, interruptedReason)
	if err != nil {
		return err
	}
	n, _ := res.RowsAffected()
	s.interrupted = int(n)
	return nil
}

// Interrupted is how many records Open found left running by dead processes
// and marked interrupted.
func (s *Store) Interrupted() int { return s.interrupted }

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Close marks this Store's records still running as interrupted (their
// runs will never be completed here) and closes the database.
func (s *Store) Close() error {
	ctx := context.Background()
	_, err1 := s.db.ExecContext(ctx, "UPDATE executions SET outcome = 'interrupted', error = ? WHERE owner = ? AND outcome = 'running'",
		interruptedReason, s.owner)
	_, err2 := s.db.ExecContext(ctx, "DELETE FROM owners WHERE id = ?", s.owner)
	openOwners.Delete(s.owner)
	return errors.Join(err1, err2, s.db.Close())
}

// Begin inserts rec, whose outcome is "running".
func (s *Store) Begin(ctx context.Context, rec *skills.Record) error {
	interp, _ := json.Marshal(rec.Interpreter)
	sets, _ := json.Marshal(nonNil(rec.Packages))
	limits, _ := json.Marshal(rec.Limits)
	calls, _ := json.Marshal(nonNil(rec.HostCalls))
	_, err := s.db.ExecContext(ctx, `INSERT INTO executions (execution_id, owner, skill, version, actor_id, actor_type,
		approved, code_hash, inputs_hash, outputs_hash, interpreter, packages, limits, outcome, error, duration_ms, fuel_used,
		memory_peak_bytes, host_calls, host_calls_total, started_at, finished_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		rec.ExecutionID, s.owner, rec.Skill, rec.Version, rec.ActorID, rec.ActorType, rec.Approved,
		rec.CodeHash, rec.InputsHash, rec.OutputsHash, string(interp), string(sets), string(limits), rec.Outcome, rec.Error,
		rec.DurationMS, clamp(rec.FuelUsed), clamp(rec.MemoryPeakBytes), string(calls), rec.HostCallsTotal,
		rec.StartedAt.UTC().Format(timeLayout), formatTime(rec.FinishedAt))
	return err
}

// Finish completes rec, written earlier by Begin.
func (s *Store) Finish(ctx context.Context, rec *skills.Record) error {
	calls, _ := json.Marshal(nonNil(rec.HostCalls))
	res, err := s.db.ExecContext(ctx, `UPDATE executions SET outputs_hash = ?, outcome = ?, error = ?, duration_ms = ?,
		fuel_used = ?, memory_peak_bytes = ?, host_calls = ?, host_calls_total = ?, finished_at = ?
		WHERE execution_id = ?`,
		rec.OutputsHash, rec.Outcome, rec.Error, rec.DurationMS, clamp(rec.FuelUsed), clamp(rec.MemoryPeakBytes),
		string(calls), rec.HostCallsTotal, formatTime(rec.FinishedAt), rec.ExecutionID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("store: execution %s was never begun", rec.ExecutionID)
	}
	return nil
}

const columns = `execution_id, skill, version, actor_id, actor_type, approved, code_hash, inputs_hash, outputs_hash,
	interpreter, packages, limits, outcome, error, duration_ms, fuel_used, memory_peak_bytes, host_calls, host_calls_total,
	started_at, finished_at`

func scan(row interface{ Scan(...any) error }) (*skills.Record, error) {
	var r skills.Record
	var interp, sets, limits, calls, started string
	var finished sql.NullString
	var fuel, mem int64
	if err := row.Scan(&r.ExecutionID, &r.Skill, &r.Version, &r.ActorID, &r.ActorType, &r.Approved, &r.CodeHash,
		&r.InputsHash, &r.OutputsHash, &interp, &sets, &limits, &r.Outcome, &r.Error, &r.DurationMS, &fuel, &mem,
		&calls, &r.HostCallsTotal, &started, &finished); err != nil {
		return nil, err
	}
	r.FuelUsed, r.MemoryPeakBytes = uint64(fuel), uint64(mem)
	if err := errors.Join(json.Unmarshal([]byte(interp), &r.Interpreter), json.Unmarshal([]byte(sets), &r.Packages),
		json.Unmarshal([]byte(limits), &r.Limits),
		json.Unmarshal([]byte(calls), &r.HostCalls)); err != nil {
		return nil, fmt.Errorf("store: execution %s: %w", r.ExecutionID, err)
	}
	var err error
	if r.StartedAt, err = time.Parse(time.RFC3339Nano, started); err != nil {
		return nil, err
	}
	if finished.Valid {
		t, err := time.Parse(time.RFC3339Nano, finished.String)
		if err != nil {
			return nil, err
		}
		r.FinishedAt = &t
	}
	return &r, nil
}

// Get returns the record of one execution, or ErrNotFound.
func (s *Store) Get(ctx context.Context, id string) (*skills.Record, error) {
	r, err := scan(s.db.QueryRowContext(ctx, "SELECT "+columns+" FROM executions WHERE execution_id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	return r, err
}

// Filter selects records; zero fields select everything.
type Filter struct {
	Skill   string // "-" selects raw code (POST /exec), whose skill is ""
	Outcome string
	ActorID string
	Since   time.Time // started at or after
	Limit   int       // List only: at most this many, newest first; 0 means 50
}

func (f Filter) where() (string, []any) {
	var conds []string
	var args []any
	if f.Skill != "" {
		skill := f.Skill
		if skill == "-" {
			skill = ""
		}
		conds, args = append(conds, "skill = ?"), append(args, skill)
	}
	if f.Outcome != "" {
		conds, args = append(conds, "outcome = ?"), append(args, f.Outcome)
	}
	if f.ActorID != "" {
		conds, args = append(conds, "actor_id = ?"), append(args, f.ActorID)
	}
	if !f.Since.IsZero() {
		conds, args = append(conds, "started_at >= ?"), append(args, f.Since.UTC().Format(timeLayout))
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// List returns the records f selects, newest first.
func (s *Store) List(ctx context.Context, f Filter) ([]*skills.Record, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	where, args := f.where()
	rows, err := s.db.QueryContext(ctx, "SELECT "+columns+" FROM executions"+where+
		" ORDER BY started_at DESC, execution_id LIMIT ?", append(args, f.Limit)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*skills.Record{}
	for rows.Next() {
		r, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// SkillStats summarise one skill's executions.
type SkillStats struct {
	Skill string `json:"skill"` // "" for raw code
	Total int    `json:"total"`
	// SuccessRate is ok / finished, where finished excludes runs still
	// running; 0 when nothing finished.
	SuccessRate float64        `json:"success_rate"`
	P50MS       float64        `json:"p50_ms"` // over runs that ran to an outcome (not interrupted or canceled)
	P95MS       float64        `json:"p95_ms"`
	Outcomes    map[string]int `json:"outcomes"`
}

// Stats summarises the records f selects (its Limit is ignored), per skill,
// sorted by skill.
func (s *Store) Stats(ctx context.Context, f Filter) ([]SkillStats, error) {
	where, args := f.where()
	rows, err := s.db.QueryContext(ctx, "SELECT skill, outcome, duration_ms FROM executions"+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	type acc struct {
		st        SkillStats
		durations []float64
	}
	by := map[string]*acc{}
	for rows.Next() {
		var skill, outcome string
		var d float64
		if err := rows.Scan(&skill, &outcome, &d); err != nil {
			return nil, err
		}
		a := by[skill]
		if a == nil {
			a = &acc{st: SkillStats{Skill: skill, Outcomes: map[string]int{}}}
			by[skill] = a
		}
		a.st.Total++
		a.st.Outcomes[outcome]++
		switch outcome {
		case skills.OutcomeRunning, skills.OutcomeInterrupted, skills.OutcomeCanceled, "internal":
		default:
			a.durations = append(a.durations, d)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]SkillStats, 0, len(by))
	for _, a := range by {
		if finished := a.st.Total - a.st.Outcomes[skills.OutcomeRunning]; finished > 0 {
			a.st.SuccessRate = float64(a.st.Outcomes[skills.OutcomeOK]) / float64(finished)
		}
		sort.Float64s(a.durations)
		a.st.P50MS, a.st.P95MS = percentile(a.durations, 50), percentile(a.durations, 95)
		out = append(out, a.st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Skill < out[j].Skill })
	return out, nil
}

// percentile is the nearest-rank percentile of sorted values; 0 for none.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}

func formatTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UTC().Format(timeLayout)
}

func clamp(v uint64) int64 { return int64(min(v, math.MaxInt64)) }

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
