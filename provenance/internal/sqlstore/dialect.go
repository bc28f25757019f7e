package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Dialect is what differs between the databases a Store runs on: the
// placeholders, how times and JSON are held, the schema's DDL, and how owners
// are judged dead.
type Dialect struct {
	Name string
	// Migrations[i] takes the schema from version i to i+1.
	Migrations []string
	// version reads the schema version; setVersion writes it in tx.
	version    func(ctx context.Context, db querier) (int, error)
	setVersion func(ctx context.Context, tx *sql.Tx, v int) error
	// lock and unlock, when set, take and release a lock on the migrating
	// connection, so that processes starting together migrate one at a time.
	lock, unlock string
	// dollar: placeholders are $1, $2... rather than ?.
	dollar bool
	// text: times are held as fixed-width UTC text (so text order is time
	// order) and JSON documents as text; otherwise as the database's own
	// timestamp and jsonb types.
	text bool
	// Lease is how long an owner may go without a heartbeat before it is
	// judged dead; 0 means owners are judged by their process alone (one
	// host).
	Lease time.Duration
}

// querier is a *sql.DB or a *sql.Tx.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// timeLayout is RFC 3339 in UTC with a fixed nine-digit fraction.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// q rewrites a query written with ? placeholders for the dialect.
func (d *Dialect) q(query string) string {
	if !d.dollar {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (d *Dialect) time(t time.Time) any {
	if d.text {
		return t.UTC().Format(timeLayout)
	}
	return t.UTC()
}

func (d *Dialect) timePtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return d.time(*t)
}

// json is a JSON document as the dialect binds it: text, or bytes, which
// pgx passes to jsonb as they are.
func (d *Dialect) json(b []byte) any {
	if d.text {
		return string(b)
	}
	return b
}

// parseTime reads a time column scanned into an any.
func parseTime(v any) (time.Time, error) {
	switch t := v.(type) {
	case time.Time:
		return t.UTC(), nil
	case string:
		return time.Parse(time.RFC3339Nano, t)
	case []byte:
		return time.Parse(time.RFC3339Nano, string(t))
	}
	return time.Time{}, fmt.Errorf("a time column holds %T", v)
}
