// Package stores opens a provenance store from where it lives: a SQLite file
// path, or a postgres:// URL.
//
//	st, err := stores.Open(ctx, os.Getenv("WASMPY_DB")) // "" is the default SQLite file
package stores

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/postgres"
	"github.com/wasmpy/wasmpy/provenance/sqlite"
)

// Store is an open provenance store.
type Store interface {
	provenance.Store
	// Interrupted is how many records opening found left running by dead
	// owners and marked interrupted.
	Interrupted() int
	// Where names the database for logs: the file, or the URL without its
	// password.
	Where() string
}

// ErrUnsupported is the error for an address this package cannot open.
var ErrUnsupported = errors.New("provenance: unsupported database")

// urlRE matches an address with a URL scheme ("postgres://...", "mysql:..."),
// and not a Windows path ("C:\...").
var urlRE = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]+):`)

// Open opens the store at addr: "" or a path is a SQLite file; a
// postgres:// or postgresql:// URL is a PostgreSQL database. Any other URL is
// an error, not a file named after it.
func Open(ctx context.Context, addr string) (Store, error) {
	m := urlRE.FindStringSubmatch(addr)
	if m == nil {
		return sqlite.Open(ctx, addr)
	}
	switch scheme := strings.ToLower(m[1]); scheme {
	case "file":
		return nil, fmt.Errorf("%w: %q: give a SQLite database as a plain path, not a file: URL", ErrUnsupported, addr)
	case "postgres", "postgresql":
		return postgres.Open(ctx, scheme+addr[len(scheme):]) // pgx knows the scheme in lowercase only
	default:
		return nil, fmt.Errorf("%w: URL scheme %q: want a SQLite file path (./NAME if it has a colon) or a postgres:// URL", ErrUnsupported, scheme)
	}
}
