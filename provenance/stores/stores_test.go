package stores_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/provenance/stores"
)

func TestOpen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p.db")
	st, err := stores.Open(ctx, path)
	require.NoError(t, err)
	require.Equal(t, path, st.Where())
	require.NoError(t, st.Close())

	for _, addr := range []string{"mysql://u@h/db", "sqlite:///tmp/x.db", "file:x.db", "HTTP://h/"} {
		_, err := stores.Open(ctx, addr)
		require.ErrorIs(t, err, stores.ErrUnsupported, addr)
	}
}
