package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/wasmpy/wasmpy/provenance"
)

// stamp fills what the store derives from a session's state, and a zero
// time with now (to the microsecond, which every database keeps).
func stamp(s *provenance.Session, t *time.Time) {
	if s.State == nil {
		s.State = []byte{}
	}
	s.Deltas, s.Size = nil, int64(len(s.State))
	nowIfZero(t)
}

// CreateSession inserts s, or fails with provenance.ErrExists.
func (s *Store) CreateSession(ctx context.Context, sess *provenance.Session) error {
	stamp(sess, &sess.CreatedAt)
	if sess.UpdatedAt.IsZero() {
		sess.UpdatedAt = sess.CreatedAt
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("provenance: session %s: %w", sess.ID, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, s.d.q(`INSERT INTO sessions (id, owner, tier, turn, state_hash, size, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`),
		sess.ID, sess.Owner, sess.Tier, sess.Turn, sess.StateHash, sess.Size, s.d.time(sess.CreatedAt), s.d.time(sess.UpdatedAt))
	if err != nil {
		return fmt.Errorf("provenance: session %s: %w", sess.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("session %s: %w", sess.ID, provenance.ErrExists)
	}
	// A session deleted while a replica appended to it may have left deltas.
	if _, err := tx.ExecContext(ctx, s.d.q("DELETE FROM session_deltas WHERE session_id = ?"), sess.ID); err != nil {
		return fmt.Errorf("provenance: session %s: %w", sess.ID, err)
	}
	if _, err := tx.ExecContext(ctx, s.d.q("INSERT INTO session_states (session_id, state) VALUES (?, ?)"), sess.ID, sess.State); err != nil {
		return fmt.Errorf("provenance: session %s: %w", sess.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("provenance: session %s: %w", sess.ID, err)
	}
	return nil
}

// UpdateSession replaces a session's turn and state, and drops its
// deltas, if its turn is still prevTurn.
func (s *Store) UpdateSession(ctx context.Context, sess *provenance.Session, prevTurn int) error {
	sess.UpdatedAt = time.Time{}
	stamp(sess, &sess.UpdatedAt)
	return s.sessionTx(ctx, sess.ID, prevTurn, func(tx *sql.Tx) (sql.Result, error) {
		res, err := tx.ExecContext(ctx, s.d.q(`UPDATE sessions SET turn = ?, state_hash = ?, size = ?, updated_at = ?
			WHERE id = ? AND turn = ?`),
			sess.Turn, sess.StateHash, sess.Size, s.d.time(sess.UpdatedAt), sess.ID, prevTurn)
		if err != nil {
			return nil, err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return res, nil
		}
		if _, err := tx.ExecContext(ctx, s.d.q("UPDATE session_states SET state = ? WHERE session_id = ?"), sess.State, sess.ID); err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, s.d.q("DELETE FROM session_deltas WHERE session_id = ?"), sess.ID); err != nil {
			return nil, err
		}
		return res, nil
	})
}

// AppendSession adds delta after a session's state and deltas, and moves
// its turn on, if its turn is still prevTurn.
func (s *Store) AppendSession(ctx context.Context, sess *provenance.Session, delta []byte, prevTurn int) error {
	if sess.Turn <= prevTurn {
		return fmt.Errorf("provenance: session %s: a delta must move the turn on from %d, not to %d", sess.ID, prevTurn, sess.Turn)
	}
	sess.UpdatedAt = time.Time{}
	nowIfZero(&sess.UpdatedAt)
	return s.sessionTx(ctx, sess.ID, prevTurn, func(tx *sql.Tx) (sql.Result, error) {
		res, err := tx.ExecContext(ctx, s.d.q(`UPDATE sessions SET turn = ?, state_hash = ?, size = size + ?, updated_at = ?
			WHERE id = ? AND turn = ?`),
			sess.Turn, sess.StateHash, len(delta), s.d.time(sess.UpdatedAt), sess.ID, prevTurn)
		if err != nil {
			return nil, err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return res, nil
		}
		if _, err := tx.ExecContext(ctx, s.d.q("INSERT INTO session_deltas (session_id, turn, delta) VALUES (?, ?, ?)"),
			sess.ID, sess.Turn, delta); err != nil {
			return nil, err
		}
		return res, tx.QueryRowContext(ctx, s.d.q("SELECT size FROM sessions WHERE id = ?"), sess.ID).Scan(&sess.Size)
	})
}

// sessionTx runs update, a conditional update of session id at prevTurn,
// in a transaction, and tells a lost race (ErrConflict) from a session
// that is gone (ErrNotFound).
func (s *Store) sessionTx(ctx context.Context, id string, prevTurn int, update func(*sql.Tx) (sql.Result, error)) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("provenance: session %s: %w", id, err)
	}
	defer tx.Rollback()
	res, err := update(tx)
	if err != nil {
		return fmt.Errorf("provenance: session %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("provenance: session %s: %w", id, err)
		}
		return nil
	}
	tx.Rollback()
	var turn int
	err = s.db.QueryRowContext(ctx, s.d.q("SELECT turn FROM sessions WHERE id = ?"), id).Scan(&turn)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("session %s: %w", id, provenance.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("provenance: session %s: %w", id, err)
	}
	return fmt.Errorf("session %s is at turn %d, not %d: %w", id, turn, prevTurn, provenance.ErrConflict)
}

const sessionColumns = "id, owner, tier, turn, state_hash, size, created_at, updated_at"

func scanSession(row interface{ Scan(...any) error }, state *[]byte) (*provenance.Session, error) {
	var sess provenance.Session
	var created, updated any
	dest := []any{&sess.ID, &sess.Owner, &sess.Tier, &sess.Turn, &sess.StateHash, &sess.Size, &created, &updated}
	if state != nil {
		dest = append(dest, state)
	}
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	var err1, err2 error
	sess.CreatedAt, err1 = parseTime(created)
	sess.UpdatedAt, err2 = parseTime(updated)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("provenance: session %s: %w", sess.ID, err)
	}
	return &sess, nil
}

// GetSession returns a session with its state and deltas, read in one
// transaction so that they agree.
func (s *Store) GetSession(ctx context.Context, id string) (*provenance.Session, error) {
	var opts *sql.TxOptions // SQLite's transactions read one snapshot
	if s.d.Name != "sqlite" {
		opts = &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	}
	tx, err := s.db.BeginTx(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("provenance: session %s: %w", id, err)
	}
	defer tx.Rollback()
	var state []byte
	sess, err := scanSession(tx.QueryRowContext(ctx, s.d.q("SELECT "+sessionColumns+
		", session_states.state FROM sessions JOIN session_states ON session_states.session_id = sessions.id WHERE id = ?"), id), &state)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("session %s: %w", id, provenance.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	if state == nil {
		state = []byte{}
	}
	sess.State = state
	if sess.Deltas, err = s.deltas(ctx, tx, id, -1); err != nil {
		return nil, err
	}
	return sess, nil
}

// SessionDeltas returns a session's deltas for the turns after afterTurn.
func (s *Store) SessionDeltas(ctx context.Context, id string, afterTurn int) ([][]byte, error) {
	return s.deltas(ctx, s.db, id, afterTurn)
}

func (s *Store) deltas(ctx context.Context, db interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, id string, afterTurn int) ([][]byte, error) {
	rows, err := db.QueryContext(ctx, s.d.q("SELECT delta FROM session_deltas WHERE session_id = ? AND turn > ? ORDER BY turn"), id, afterTurn)
	if err != nil {
		return nil, fmt.Errorf("provenance: session %s: %w", id, err)
	}
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var d []byte
		if err := rows.Scan(&d); err != nil {
			return nil, fmt.Errorf("provenance: session %s: %w", id, err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("provenance: session %s: %w", id, err)
	}
	return out, nil
}

// StatSession returns a session without its state or deltas.
func (s *Store) StatSession(ctx context.Context, id string) (*provenance.Session, error) {
	sess, err := scanSession(s.db.QueryRowContext(ctx, s.d.q("SELECT "+sessionColumns+" FROM sessions WHERE id = ?"), id), nil)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("session %s: %w", id, provenance.ErrNotFound)
	}
	return sess, err
}

// DeleteSession removes a session and its deltas.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("provenance: session %s: %w", id, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, s.d.q("DELETE FROM sessions WHERE id = ?"), id)
	if err != nil {
		return fmt.Errorf("provenance: session %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("session %s: %w", id, provenance.ErrNotFound)
	}
	for _, table := range []string{"session_states", "session_deltas"} {
		if _, err := tx.ExecContext(ctx, s.d.q("DELETE FROM "+table+" WHERE session_id = ?"), id); err != nil {
			return fmt.Errorf("provenance: session %s: %w", id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("provenance: session %s: %w", id, err)
	}
	return nil
}

// ListSessions returns the sessions f selects, without their states, most
// recently updated first.
func (s *Store) ListSessions(ctx context.Context, f provenance.SessionFilter) ([]*provenance.Session, error) {
	query, args := "SELECT "+sessionColumns+" FROM sessions WHERE 1 = 1", []any{}
	if f.Owner != "" {
		query, args = query+" AND owner = ?", append(args, f.Owner)
	}
	if !f.UpdatedBefore.IsZero() {
		query, args = query+" AND updated_at < ?", append(args, s.d.time(f.UpdatedBefore))
	}
	query += " ORDER BY updated_at DESC, id"
	if f.Limit > 0 {
		query, args = query+" LIMIT ?", append(args, f.Limit)
	}
	rows, err := s.db.QueryContext(ctx, s.d.q(query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*provenance.Session{}
	for rows.Next() {
		sess, err := scanSession(rows, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, sess)
	}
	return out, rows.Err()
}
