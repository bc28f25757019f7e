package stores_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/internal/testing/pgtest"
	"github.com/wasmpy/wasmpy/provenance/stores"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestOpen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p.db")
	st, err := stores.Open(ctx, path)
	require.NoError(t, err)
	require.Equal(t, path, st.Where())
	require.NoError(t, st.Close())

	url := pgtest.NewDatabase(t)
	for _, addr := range []string{url, strings.Replace(url, "postgres:", "PostgreSQL:", 1)} {
		st, err = stores.Open(ctx, addr)
		require.NoError(t, err, addr)
		require.Contains(t, st.Where(), "/test_")
		require.NoError(t, st.Close())
	}

	for _, addr := range []string{"mysql://u@h/db", "sqlite:///tmp/x.db", "file:x.db", "HTTP://h/"} {
		_, err := stores.Open(ctx, addr)
		require.ErrorIs(t, err, stores.ErrUnsupported, addr)
	}
}
