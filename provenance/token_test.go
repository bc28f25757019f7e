package provenance_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/provenance"
)

func TestNewToken(t *testing.T) {
	tok, secret, err := provenance.NewToken("ci-bot", provenance.RoleRunner, "")
	require.NoError(t, err)
	require.Equal(t, provenance.DefaultMaxTier, tok.MaxTier, "the strictest tier unless asked")
	require.Equal(t, provenance.HashBytes([]byte(secret)), tok.Hash, "only the hash is kept")
	require.True(t, strings.HasPrefix(secret, "wasmpy_"))
	require.False(t, tok.Admin())
	_, again, err := provenance.NewToken("ci-bot", provenance.RoleAdmin, "trusted")
	require.NoError(t, err)
	require.NotEqual(t, secret, again, "a fresh secret each time")

	for _, c := range []struct{ name, role, tier, want string }{
		{"", provenance.RoleRunner, "", `name ""`},
		{"has space", provenance.RoleRunner, "", `name "has space"`},
		{"ops", "root", "", `role "root": want runner or admin`},
		{"ops", provenance.RoleAdmin, "Trusted!", `max tier "Trusted!"`},
	} {
		_, _, err := provenance.NewToken(c.name, c.role, c.tier)
		require.ErrorContains(t, err, c.want)
	}
	_, _, err = provenance.NewToken("", "root", "x y")
	require.ErrorContains(t, err, `name ""`)
	require.ErrorContains(t, err, `role "root"`, "every problem at once")
	require.ErrorContains(t, err, `max tier "x y"`)
}
