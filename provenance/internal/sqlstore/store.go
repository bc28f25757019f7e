// Package sqlstore is the provenance.Store both databases share: one
// implementation over database/sql, with a Dialect for what differs.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/wasmpy/wasmpy/provenance"
)

// Store is a provenance.Store over an open database.
type Store struct {
	db          *sql.DB
	d           *Dialect
	owner       string
	interrupted int
	stop        context.CancelFunc
	beating     sync.WaitGroup
}

// openOwners are the owner ids of the Stores open in this process: an owner
// with this process's pid is alive only if it is listed here.
var openOwners sync.Map

// Open migrates db's schema, marks the records of dead owners interrupted,
// and registers the new Store as an owner. With a lease, a goroutine keeps
// the owner's heartbeat and recovers dead owners until Close. On an error
// the caller still owns db.
func Open(ctx context.Context, db *sql.DB, d *Dialect) (*Store, error) {
	s := &Store{db: db, d: d, owner: provenance.NewID()}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	n, err := s.Recover(ctx)
	if err != nil {
		return nil, err
	}
	s.interrupted = n
	if err := s.register(ctx); err != nil {
		return nil, err
	}
	openOwners.Store(s.owner, true)
	if d.Lease > 0 {
		hctx, stop := context.WithCancel(context.Background())
		s.stop = stop
		s.beating.Add(1)
		go s.heartbeat(hctx)
	}
	return s, nil
}

// migrate brings the schema to the newest version this code knows, one
// version per step, in one transaction. Where the dialect has a lock, it is
// held on the migrating connection around that transaction, and the version
// is read once it is held: the transaction then starts after any other
// process's migration committed, and sees its tables.
func (s *Store) migrate(ctx context.Context) error {
	latest := len(s.d.Migrations)
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if s.d.lock != "" {
		if _, err := conn.ExecContext(ctx, s.d.lock); err != nil {
			return err
		}
		defer conn.ExecContext(context.Background(), s.d.unlock)
	}
	v, err := s.d.version(ctx, conn)
	if err != nil {
		return err
	}
	if v > latest {
		return fmt.Errorf("schema written by a newer wasmpy (version %d, this one knows %d)", v, latest)
	}
	if v == latest {
		return nil
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for ; v < latest; v++ {
		if _, err := tx.ExecContext(ctx, s.d.Migrations[v]); err != nil {
			return fmt.Errorf("migrating the schema to version %d: %w", v+1, err)
		}
	}
	if err := s.d.setVersion(ctx, tx, latest); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *Store) register(ctx context.Context) error {
	host, _ := os.Hostname()
	now := s.d.time(time.Now())
	_, err := s.db.ExecContext(ctx, s.d.q("INSERT INTO owners (id, pid, host, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?)"),
		s.owner, os.Getpid(), host, now, now)
	return err
}

// heartbeat renews the owner's lease and recovers dead owners, three times
// a lease, until ctx ends. An owner that others judged dead (its lease ran
// out: a long pause) registers again.
func (s *Store) heartbeat(ctx context.Context) {
	defer s.beating.Done()
	t := time.NewTicker(s.d.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		res, err := s.db.ExecContext(ctx, s.d.q("UPDATE owners SET heartbeat_at = ? WHERE id = ?"), s.d.time(time.Now()), s.owner)
		if err != nil {
			continue // the database is away; readiness (Ping) reports it
		}
		if n, _ := res.RowsAffected(); n == 0 {
			s.register(ctx)
		}
		s.Recover(ctx)
	}
}

// interruptedReason is the error of a record found interrupted.
const interruptedReason = "the process running it ended before the run finished"

// Recover forgets dead owners and marks their running records interrupted.
// An owner is dead when it is on this host and its process is gone (or is
// this process, and the owner is not open here), or, with a lease, when its
// heartbeat is older than the lease. Owners on other hosts without a lease
// are never judged dead.
func (s *Store) Recover(ctx context.Context) (int, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, "SELECT id, pid, host, heartbeat_at FROM owners")
	if err != nil {
		return 0, err
	}
	host, _ := os.Hostname()
	now := time.Now()
	var dead []string
	for rows.Next() {
		var id, h string
		var pid int
		var beat any
		if err := rows.Scan(&id, &pid, &h, &beat); err != nil {
			rows.Close()
			return 0, err
		}
		switch {
		case h == host && pid == os.Getpid():
			if _, open := openOwners.Load(id); !open {
				dead = append(dead, id)
			}
		case h == host && !processAlive(pid):
			dead = append(dead, id)
		case s.d.Lease > 0:
			if t, err := parseTime(beat); err == nil && now.Sub(t) > s.d.Lease {
				dead = append(dead, id)
			}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, id := range dead {
		if _, err := tx.ExecContext(ctx, s.d.q("DELETE FROM owners WHERE id = ?"), id); err != nil {
			return 0, err
		}
	}
	res, err := tx.ExecContext(ctx, s.d.q(`UPDATE executions SET outcome = 'interrupted', error = ?
		WHERE outcome = 'running' AND owner NOT IN (SELECT id FROM owners)`), interruptedReason)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return int(n), tx.Commit()
}

// Interrupted is how many records Open found left running by dead owners
// and marked interrupted.
func (s *Store) Interrupted() int { return s.interrupted }

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// closeTimeout bounds Close's last writes.
const closeTimeout = 10 * time.Second

// Close marks this Store's records still running as interrupted (their
// runs will never be completed here), stops the heartbeat and closes the
// database.
func (s *Store) Close() error {
	if s.stop != nil {
		s.stop()
		s.beating.Wait()
	}
	// A database that went away must not hold up a shutdown.
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	_, err1 := s.db.ExecContext(ctx, s.d.q("UPDATE executions SET outcome = 'interrupted', error = ? WHERE owner = ? AND outcome = 'running'"),
		interruptedReason, s.owner)
	_, err2 := s.db.ExecContext(ctx, s.d.q("DELETE FROM owners WHERE id = ?"), s.owner)
	openOwners.Delete(s.owner)
	return errors.Join(err1, err2, s.db.Close())
}
