package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/stores"
)

func TestTokenCommands(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	code, secret, errOut := wasmpyCLI(t, "", "token", "create", "ops", "--role", "admin", "--max-tier", "trusted", "--db", db)
	require.Equal(t, 0, code, errOut)
	secret = strings.TrimSpace(secret)
	require.Contains(t, errOut, `token "ops" (role admin, max tier trusted) created`)
	code, _, errOut = wasmpyCLI(t, "", "token", "create", "agent", "--db", db)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "role runner, max tier sandbox", "the defaults")

	code, _, errOut = wasmpyCLI(t, "", "token", "create", "ops", "--db", db)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `a token called "ops" exists`)
	code, _, errOut = wasmpyCLI(t, "", "token", "create", "bad name", "--role", "root", "--db", db)
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `name "bad name"`)
	require.Contains(t, errOut, `role "root": want runner or admin`)

	code, out, _ := wasmpyCLI(t, "", "token", "list", "--db", db)
	require.Equal(t, 0, code)
	require.Regexp(t, `NAME\s+ROLE\s+MAX TIER\s+CREATED\nagent\s+runner\s+sandbox\s+\S+ \S+\nops\s+admin\s+trusted\s`, out)
	require.NotContains(t, out, secret)
	code, out, _ = wasmpyCLI(t, "", "token", "list", "--json", "--db", db)
	require.Equal(t, 0, code)
	var toks []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &toks))
	require.Len(t, toks, 2)
	require.Equal(t, "trusted", toks[1]["max_tier"])
	require.NotContains(t, out, "hash", "the hash is not listed")

	// The secret printed is the one the store knows.
	st, err := stores.Open(context.Background(), db)
	require.NoError(t, err)
	tok, err := st.TokenByHash(context.Background(), provenance.HashBytes([]byte(secret)))
	require.NoError(t, err)
	require.Equal(t, "ops", tok.Name)
	st.Close()

	code, _, errOut = wasmpyCLI(t, "", "token", "delete", "ops", "--db", db)
	require.Equal(t, 0, code, errOut)
	code, _, errOut = wasmpyCLI(t, "", "token", "delete", "ops", "--db", db)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `no token called "ops"`)
}
