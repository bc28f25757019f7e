package service_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/stores"
	"github.com/wasmpy/wasmpy/service"
)

// tokenStore is a fresh store holding an admin's and a runner's token; it
// returns their secrets.
func tokenStore(t *testing.T) (stores.Store, string, string) {
	t.Helper()
	ctx := context.Background()
	st, err := stores.Open(ctx, filepath.Join(t.TempDir(), "tokens.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	adminTok, adminSecret, err := provenance.NewToken("ops", provenance.RoleAdmin, "trusted")
	require.NoError(t, err)
	require.NoError(t, st.CreateToken(ctx, adminTok))
	runTok, runSecret, err := provenance.NewToken("agent", provenance.RoleRunner, "")
	require.NoError(t, err)
	require.NoError(t, st.CreateToken(ctx, runTok))
	return st, adminSecret, runSecret
}

// Tokens in the store turn authentication on; each is looked up per
// request, so one deleted is refused at once, and static tokens still work.
func TestStoreTokens(t *testing.T) {
	st, adminSecret, runSecret := tokenStore(t)
	s := startServer(t, func(c *service.Config) { c.TokenStore = st; c.Tokens = []string{"static-one"} })
	for _, h := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "Bearer " + runSecret + "x"}} {
		r := s.do(t, "GET", "/skills", "", h...)
		require.Equal(t, 401, r.status, h)
		require.Equal(t, "unauthorized", r.errorCode())
	}
	for _, secret := range []string{adminSecret, runSecret, "static-one"} {
		require.Equal(t, 200, s.do(t, "GET", "/skills", "", "Authorization", "Bearer "+secret).status)
	}
	require.NoError(t, st.DeleteToken(context.Background(), "agent"))
	require.Equal(t, 401, s.do(t, "GET", "/skills", "", "Authorization", "Bearer "+runSecret).status, "deleted: refused at once")

	// A service whose store has no token asks for none.
	empty, err := stores.Open(context.Background(), filepath.Join(t.TempDir(), "empty.db"))
	require.NoError(t, err)
	defer empty.Close()
	open := startServer(t, func(c *service.Config) { c.TokenStore = empty })
	require.Equal(t, 200, open.do(t, "GET", "/skills", "").status)
}
