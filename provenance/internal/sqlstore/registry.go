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

// RegisterSkill stores a skill version, once.
func (s *Store) RegisterSkill(ctx context.Context, sk *provenance.RegisteredSkill) error {
	nowIfZero(&sk.RegisteredAt)
	files, err := json.Marshal(sk.Files)
	if err != nil {
		return err
	}
	res, err := s.db.ExecContext(ctx, s.d.q(`INSERT INTO skills (name, version, files, disabled, registered_by, registered_at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (name, version) DO NOTHING`),
		sk.Name, sk.Version, files, sk.Disabled, sk.RegisteredBy, s.d.time(sk.RegisteredAt))
	if err != nil {
		return fmt.Errorf("provenance: skill %s %s: %w", sk.Name, sk.Version, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("skill %s %s: %w", sk.Name, sk.Version, provenance.ErrExists)
	}
	return nil
}

// RegisteredSkills returns every registered version with its files.
func (s *Store) RegisteredSkills(ctx context.Context) ([]*provenance.RegisteredSkill, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name, version, files, disabled, registered_by, registered_at
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
		if err := rows.Scan(&sk.Name, &sk.Version, &files, &sk.Disabled, &sk.RegisteredBy, &at); err != nil {
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

// SetSkillDisabled disables or enables one version.
func (s *Store) SetSkillDisabled(ctx context.Context, name, version string, disabled bool) error {
	return s.changeOne(ctx, fmt.Sprintf("skill %s %s", name, version),
		"UPDATE skills SET disabled = ? WHERE name = ? AND version = ?", disabled, name, version)
}

// DeleteSkill removes one version.
func (s *Store) DeleteSkill(ctx context.Context, name, version string) error {
	return s.changeOne(ctx, fmt.Sprintf("skill %s %s", name, version),
		"DELETE FROM skills WHERE name = ? AND version = ?", name, version)
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
