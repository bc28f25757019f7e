package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/wasmpy/wasmpy/provenance"
)

// nowIfZero is t, or now (to the microsecond, which every database keeps).
func nowIfZero(t *time.Time) {
	if t.IsZero() {
		*t = time.Now().UTC().Truncate(time.Microsecond)
	}
}

// RegisterSkill stores a skill version, once, with its audit entry.
func (s *Store) RegisterSkill(ctx context.Context, sk *provenance.RegisteredSkill) error {
	nowIfZero(&sk.RegisteredAt)
	sk.Hash = provenance.HashFiles(sk.Files)
	files, err := json.Marshal(sk.Files)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("skill %s %s", sk.Name, sk.Version)
	return s.audited(ctx, what, func(tx *sql.Tx) (string, error) {
		res, err := tx.ExecContext(ctx, s.d.q(`INSERT INTO skills (name, version, files, hash, disabled, registered_by, registered_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name, version) DO NOTHING`),
			sk.Name, sk.Version, files, sk.Hash, sk.Disabled, sk.RegisteredBy, s.d.time(sk.RegisteredAt))
		if err != nil {
			return "", err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return "", fmt.Errorf("%s: %w", what, provenance.ErrExists)
		}
		return sk.Hash, nil
	}, &provenance.AuditEntry{At: sk.RegisteredAt, Actor: sk.RegisteredBy, Action: provenance.ActionRegister, Skill: sk.Name, Version: sk.Version})
}

// audited runs change in a transaction and appends e to the audit trail in
// the same one, with the hash change returns.
func (s *Store) audited(ctx context.Context, what string, change func(*sql.Tx) (string, error), e *provenance.AuditEntry) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("provenance: %s: %w", what, err)
	}
	defer tx.Rollback()
	if e.Hash, err = change(tx); err != nil {
		if errors.Is(err, provenance.ErrExists) || errors.Is(err, provenance.ErrNotFound) {
			return err
		}
		return fmt.Errorf("provenance: %s: %w", what, err)
	}
	nowIfZero(&e.At)
	if _, err := tx.ExecContext(ctx, s.d.q(`INSERT INTO skill_audit (at, actor, action, skill, version, hash) VALUES (?, ?, ?, ?, ?, ?)`),
		s.d.time(e.At), e.Actor, e.Action, e.Skill, e.Version, e.Hash); err != nil {
		return fmt.Errorf("provenance: %s: audit: %w", what, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("provenance: %s: %w", what, err)
	}
	return nil
}

// RegisteredSkills returns every registered version with its files.
func (s *Store) RegisteredSkills(ctx context.Context) ([]*provenance.RegisteredSkill, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name, version, files, hash, disabled, registered_by, registered_at
		FROM skills ORDER BY name, registered_at, version`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*provenance.RegisteredSkill{}
	for rows.Next() {
		var sk provenance.RegisteredSkill
		var files []byte
		var at any
		if err := rows.Scan(&sk.Name, &sk.Version, &files, &sk.Hash, &sk.Disabled, &sk.RegisteredBy, &at); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(files, &sk.Files); err != nil {
			return nil, fmt.Errorf("provenance: skill %s %s: %w", sk.Name, sk.Version, err)
		}
		if sk.RegisteredAt, err = parseTime(at); err != nil {
			return nil, fmt.Errorf("provenance: skill %s %s: %w", sk.Name, sk.Version, err)
		}
		out = append(out, &sk)
	}
	return out, rows.Err()
}

// SkillState returns one version's hash and whether it is disabled.
func (s *Store) SkillState(ctx context.Context, name, version string) (hash string, disabled bool, err error) {
	err = s.db.QueryRowContext(ctx, s.d.q("SELECT hash, disabled FROM skills WHERE name = ? AND version = ?"), name, version).Scan(&hash, &disabled)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, fmt.Errorf("skill %s %s: %w", name, version, provenance.ErrNotFound)
	}
	return hash, disabled, err
}

// SetSkillDisabled disables or enables one version, audited.
func (s *Store) SetSkillDisabled(ctx context.Context, name, version string, disabled bool, by string) error {
	action := provenance.ActionEnable
	if disabled {
		action = provenance.ActionDisable
	}
	return s.changeSkill(ctx, name, version, "UPDATE skills SET disabled = ? WHERE name = ? AND version = ?",
		[]any{disabled, name, version}, &provenance.AuditEntry{Actor: by, Action: action, Skill: name, Version: version})
}

// DeleteSkill removes one version, audited.
func (s *Store) DeleteSkill(ctx context.Context, name, version, by string) error {
	return s.changeSkill(ctx, name, version, "DELETE FROM skills WHERE name = ? AND version = ?",
		[]any{name, version}, &provenance.AuditEntry{Actor: by, Action: provenance.ActionDelete, Skill: name, Version: version})
}

// changeSkill runs a statement on one existing version, audited with the
// version's hash.
func (s *Store) changeSkill(ctx context.Context, name, version, query string, args []any, e *provenance.AuditEntry) error {
	what := fmt.Sprintf("skill %s %s", name, version)
	return s.audited(ctx, what, func(tx *sql.Tx) (string, error) {
		var hash string
		err := tx.QueryRowContext(ctx, s.d.q("SELECT hash FROM skills WHERE name = ? AND version = ?"), name, version).Scan(&hash)
		if errors.Is(err, sql.ErrNoRows) {
			return "", fmt.Errorf("%s: %w", what, provenance.ErrNotFound)
		}
		if err != nil {
			return "", err
		}
		_, err = tx.ExecContext(ctx, s.d.q(query), args...)
		return hash, err
	}, e)
}

// SkillAudit returns the audit trail f selects, newest first.
func (s *Store) SkillAudit(ctx context.Context, f provenance.AuditFilter) ([]*provenance.AuditEntry, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	query, args := "SELECT at, actor, action, skill, version, hash FROM skill_audit", []any{}
	if f.Skill != "" {
		query, args = query+" WHERE skill = ?", append(args, f.Skill)
	}
	rows, err := s.db.QueryContext(ctx, s.d.q(query+" ORDER BY id DESC LIMIT ?"), append(args, f.Limit)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*provenance.AuditEntry{}
	for rows.Next() {
		var e provenance.AuditEntry
		var at any
		if err := rows.Scan(&at, &e.Actor, &e.Action, &e.Skill, &e.Version, &e.Hash); err != nil {
			return nil, err
		}
		if e.At, err = parseTime(at); err != nil {
			return nil, fmt.Errorf("provenance: audit: %w", err)
		}
		out = append(out, &e)
	}
	return out, rows.Err()
}

// changeOne runs a statement that changes one row, or fails with
// provenance.ErrNotFound when it changed none.
func (s *Store) changeOne(ctx context.Context, what, query string, args ...any) error {
	res, err := s.db.ExecContext(ctx, s.d.q(query), args...)
	if err != nil {
		return fmt.Errorf("provenance: %s: %w", what, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%s: %w", what, provenance.ErrNotFound)
	}
	return nil
}

// CreateToken stores t, or fails with provenance.ErrExists.
func (s *Store) CreateToken(ctx context.Context, t *provenance.Token) error {
	nowIfZero(&t.CreatedAt)
	res, err := s.db.ExecContext(ctx, s.d.q(`INSERT INTO tokens (name, hash, role, max_tier, created_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`), t.Name, t.Hash, t.Role, t.MaxTier, s.d.time(t.CreatedAt))
	if err != nil {
		return fmt.Errorf("provenance: token %s: %w", t.Name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("token %s (or its hash): %w", t.Name, provenance.ErrExists)
	}
	return nil
}

const tokenColumns = "name, hash, role, max_tier, created_at"

func scanToken(row interface{ Scan(...any) error }) (*provenance.Token, error) {
	var t provenance.Token
	var at any
	if err := row.Scan(&t.Name, &t.Hash, &t.Role, &t.MaxTier, &at); err != nil {
		return nil, err
	}
	var err error
	if t.CreatedAt, err = parseTime(at); err != nil {
		return nil, fmt.Errorf("provenance: token %s: %w", t.Name, err)
	}
	return &t, nil
}

// TokenByHash returns the token whose hash is hash.
func (s *Store) TokenByHash(ctx context.Context, hash string) (*provenance.Token, error) {
	t, err := scanToken(s.db.QueryRowContext(ctx, s.d.q("SELECT "+tokenColumns+" FROM tokens WHERE hash = ?"), hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("token: %w", provenance.ErrNotFound)
	}
	return t, err
}

// ListTokens returns every token, by name.
func (s *Store) ListTokens(ctx context.Context) ([]*provenance.Token, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+tokenColumns+" FROM tokens ORDER BY name")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*provenance.Token{}
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// DeleteToken removes the token called name.
func (s *Store) DeleteToken(ctx context.Context, name string) error {
	return s.changeOne(ctx, "token "+name, "DELETE FROM tokens WHERE name = ?", name)
}
