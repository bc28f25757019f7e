package pgtest_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/internal/testing/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// The server runs, each test database is its own, and the server is not
// root's.
func TestNewDatabase(t *testing.T) {
	a, b := pgtest.NewDatabase(t), pgtest.NewDatabase(t)
	require.NotEqual(t, a, b)
	db, err := sql.Open("pgx", a)
	require.NoError(t, err)
	defer db.Close()
	var name string
	require.NoError(t, db.QueryRow("SELECT current_database()").Scan(&name))
	require.Contains(t, a, "/"+name+"?")
	var superuser string
	require.NoError(t, db.QueryRow("SHOW is_superuser").Scan(&superuser))
	require.Equal(t, "on", superuser, "the tests' user owns the server")

	// The server process runs as its own user: never root.
	var pid int
	require.NoError(t, db.QueryRow("SELECT pg_backend_pid()").Scan(&pid))
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^Uid:\s+(\d+)`).FindSubmatch(status)
	require.NotNil(t, m)
	require.NotEqual(t, "0", string(m[1]))
}

// Without the server's binaries, the error names the Debian package.
func TestMissingServer(t *testing.T) {
	t.Setenv("WASMPY_PG_BIN", t.TempDir())
	_, err := pgtest.Start(context.Background())
	require.ErrorContains(t, err, "install Debian's postgresql package")
}
