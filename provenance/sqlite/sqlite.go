// Package sqlite is the embedded provenance.Store: one SQLite file
// (github.com/ncruces/go-sqlite3: SQLite in pure Go, no cgo), the default
// when no database URL is given.
//
//	st, err := sqlite.Open(ctx, "") // the default file under the user's data dir
//	defer st.Close()
//
// Crash safety: a record is written as running before its run starts and
// completed after. Every open Store registers its process as an owner; when
// a Store opens and finds records left running by an owner whose process is
// gone, it marks them interrupted. The database is in WAL mode with
// synchronous=NORMAL, so a killed process loses nothing it committed (a
// power cut may lose the last commits, never consistency). Several processes
// on one host may share the file (a service and `wasmpy history`, say);
// SQLite's WAL needs them on the same host. Replicas on several hosts share
// a PostgreSQL database instead (package provenance/postgres).
package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"

	_ "github.com/ncruces/go-sqlite3/driver" // registers "sqlite3"

	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/internal/sqlstore"
)

// Store is an open SQLite provenance database.
type Store struct {
	*sqlstore.Store
	path string
}

var _ provenance.Store = (*Store)(nil)

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
				return "", fmt.Errorf("provenance: no data dir: %w", err)
			}
		} else {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("provenance: no data dir: %w", err)
			}
			dir = filepath.Join(home, ".local", "share")
		}
	}
	return filepath.Join(dir, "wasmpy", "provenance.db"), nil
}

// Open opens (creating if need be) the database at path, "" meaning
// DefaultPath, migrates its schema, and marks the records that dead
// processes left running as interrupted.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		var err error
		if path, err = DefaultPath(); err != nil {
			return nil, err
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("provenance: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("provenance: %w", err)
	}
	// Provenance is nobody else's business: create the file private.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("provenance: %w", err)
	}
	f.Close()
	q := url.Values{"_txlock": {"immediate"}, "_pragma": {
		"busy_timeout(10000)", "journal_mode(wal)", "synchronous(normal)",
	}}
	dsn := "file:" + (&url.URL{Path: filepath.ToSlash(abs)}).EscapedPath() + "?" + q.Encode()
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, fmt.Errorf("provenance: %s: %w", path, err)
	}
	var mode string
	var st *sqlstore.Store
	err = db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode)
	if err == nil && mode != "wal" {
		err = fmt.Errorf("journal mode is %q, want wal", mode)
	}
	if err == nil {
		st, err = sqlstore.Open(ctx, db, sqlstore.SQLite)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("provenance: %s: %w", path, err)
	}
	return &Store{Store: st, path: abs}, nil
}

// Where is the database file, for logs.
func (s *Store) Where() string { return s.path }
