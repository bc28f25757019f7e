// Package pgtest runs a throwaway PostgreSQL server: Debian's postgresql
// package, started in a temporary directory, listening on a unix socket
// there only, as its own user (the postgres user when run as root, since
// the server refuses to run as root), stopped and removed after. Tests get
// a fresh database each from the one server their binary starts; the
// cluster test starts its own.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
)

// Missing names what to install when no server can be started.
const Missing = "PostgreSQL server binaries (initdb, postgres) not found: install Debian's postgresql package " +
	"(`make setup` does, as root: apt-get install postgresql), or set WASMPY_PG_BIN to their directory"

// Server is a running PostgreSQL server.
type Server struct {
	dir  string // owns the data directory, the socket and the log
	cmd  *exec.Cmd
	done chan error
	n    atomic.Int64
}

// binDir finds initdb and postgres: $WASMPY_PG_BIN, Debian's
// /usr/lib/postgresql/N/bin (the newest), or the PATH.
func binDir() (string, error) {
	if d := os.Getenv("WASMPY_PG_BIN"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
			return "", fmt.Errorf("WASMPY_PG_BIN=%s: %w; %s", d, err, Missing)
		}
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New(Missing)
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// Start initialises a database cluster in a new temporary directory and
// starts a server on it, returning once it accepts connections.
func Start(ctx context.Context) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "wasmpy-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, done: make(chan error, 1)}
	initdbAttr, serverAttr, err := procAttrs(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "wasmpy", "--auth=trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = initdbAttr
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: initdb: %v: %s", err, lastLines(string(out), 5))
	}
	logf, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer logf.Close()
	s.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-k", dir, "-c", "listen_addresses=",
		"-c", "max_connections=300", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "dynamic_shared_memory_type=mmap", "-c", "shared_buffers=32MB")
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = serverAttr
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: starting postgres: %w", err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	if err := s.ready(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// ready waits, up to a minute, for the server to accept connections.
func (s *Server) ready(ctx context.Context) error {
	db, err := sql.Open("pgx", s.URL("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	deadline := time.Now().Add(time.Minute)
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := db.PingContext(pctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case werr := <-s.done:
			s.done <- werr
			return fmt.Errorf("pgtest: postgres exited (%v): %s", werr, s.Log(10))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgtest: postgres did not accept connections within a minute: %v: %s", err, s.Log(10))
		}
	}
}

// URL is the address of database db on the server, as user wasmpy.
func (s *Server) URL(db string) string {
	return "postgres://wasmpy@/" + db + "?host=" + s.dir
}

// CreateDatabase creates a new, empty database and returns its URL.
func (s *Server) CreateDatabase(ctx context.Context) (string, error) {
	name := fmt.Sprintf("test_%d", s.n.Add(1))
	db, err := sql.Open("pgx", s.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("pgtest: %w", err)
	}
	return s.URL(name), nil
}

// Log returns the last n lines of the server's log.
func (s *Server) Log(n int) string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "log"))
	return lastLines(string(b), n)
}

// Stop shuts the server down (a fast shutdown, then a kill after 30s) and
// removes its directory.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Signal(os.Interrupt)
		select {
		case <-s.done:
		case <-time.After(30 * time.Second):
			killGroup(s.cmd.Process.Pid)
			<-s.done
		}
	}
	os.RemoveAll(s.dir)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

var (
	shared     *Server
	sharedErr  error
	sharedOnce sync.Once
)

// NewDatabase returns the URL of a fresh database on the server this test
// binary shares, starting it on first use. It fails the test, naming the
// package to install, when no server can be started; it never skips.
func NewDatabase(t testing.TB) string {
	t.Helper()
	sharedOnce.Do(func() { shared, sharedErr = Start(context.Background()) })
	if sharedErr != nil {
		t.Fatalf("PostgreSQL tests need a server: %v", sharedErr)
	}
	url, err := shared.CreateDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return url
}

// Main runs a test binary's tests, then stops the shared server if they
// started it: call it from TestMain.
func Main(m *testing.M) int {
	code := m.Run()
	if shared != nil {
		shared.Stop()
	}
	return code
}
