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
	s.StateHash, s.Size = provenance.HashBytes(s.State), int64(len(s.State))
	nowIfZero(t)
}

// CreateSession inserts s, or fails with provenance.ErrExists.
func (s *Store) CreateSession(ctx context.Context, sess *provenance.Session) error {
	stamp(sess, &sess.CreatedAt)
	if sess.UpdatedAt.IsZero() {
		sess.UpdatedAt = sess.CreatedAt
	}
	res, err := s.db.ExecContext(ctx, s.d.q(`INSERT INTO sessions (id, owner, turn, state, state_hash, size, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`),
		sess.ID, sess.Owner, sess.Turn, sess.State, sess.StateHash, sess.Size, s.d.time(sess.CreatedAt), s.d.time(sess.UpdatedAt))
	if err != nil {
		return fmt.Errorf("provenance: session %s: %w", sess.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("session %s: %w", sess.ID, provenance.ErrExists)
	}
	return nil
}

// UpdateSession replaces a session's turn and state if its turn is still
// prevTurn.
func (s *Store) UpdateSession(ctx context.Context, sess *provenance.Session, prevTurn int) error {
	sess.UpdatedAt = time.Time{}
	stamp(sess, &sess.UpdatedAt)
	res, err := s.db.ExecContext(ctx, s.d.q(`UPDATE sessions SET turn = ?, state = ?, state_hash = ?, size = ?, updated_at = ?
		WHERE id = ? AND turn = ?`),
		sess.Turn, sess.State, sess.StateHash, sess.Size, s.d.time(sess.UpdatedAt), sess.ID, prevTurn)
	if err != nil {
		return fmt.Errorf("provenance: session %s: %w", sess.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	var turn int
	err = s.db.QueryRowContext(ctx, s.d.q("SELECT turn FROM sessions WHERE id = ?"), sess.ID).Scan(&turn)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("session %s: %w", sess.ID, provenance.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("provenance: session %s: %w", sess.ID, err)
	}
	return fmt.Errorf("session %s is at turn %d, not %d: %w", sess.ID, turn, prevTurn, provenance.ErrConflict)
}

const sessionColumns = "id, owner, turn, state_hash, size, created_at, updated_at"

func scanSession(row interface{ Scan(...any) error }, state *[]byte) (*provenance.Session, error) {
	var sess provenance.Session
	var created, updated any
	dest := []any{&sess.ID, &sess.Owner, &sess.Turn, &sess.StateHash, &sess.Size, &created, &updated}
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

// GetSession returns a session with its state.
func (s *Store) GetSession(ctx context.Context, id string) (*provenance.Session, error) {
	var state []byte
	sess, err := scanSession(s.db.QueryRowContext(ctx, s.d.q("SELECT "+sessionColumns+", state FROM sessions WHERE id = ?"), id), &state)
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
	return sess, nil
}

// DeleteSession removes a session.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, s.d.q("DELETE FROM sessions WHERE id = ?"), id)
	if err != nil {
		return fmt.Errorf("provenance: session %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("session %s: %w", id, provenance.ErrNotFound)
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
