package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/stores"
)

// Provenance written by any means (an older service, another tool, the
// database edited) cannot reach the operator's terminal raw through
// history, history show or stats, nor forge a row.
func TestHistoryEscapesWhatCameFromRequests(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	st, err := stores.Open(context.Background(), db)
	require.NoError(t, err)
	started := time.Now().UTC()
	rec := &provenance.Record{ExecutionID: provenance.NewID(), Skill: "echo\x1b[2J", Version: "1.0.0\nFAKE", ActorID: "evil\x1b]0;PWNED\x07\x1b[2J",
		ActorType: "agent\nFAKE LINE", Outcome: provenance.OutcomeRunning, StartedAt: started, HostCalls: []provenance.HostCall{}}
	require.NoError(t, st.Begin(context.Background(), rec))
	rec.Outcome, rec.Error, rec.FinishedAt = "exception\x1b[31m", "Boom\u202e\x07", &started
	require.NoError(t, st.Finish(context.Background(), rec))
	require.NoError(t, st.Close())

	for _, args := range [][]string{
		{"history", "--db", db},
		{"history", "show", rec.ExecutionID, "--db", db},
		{"stats", "--db", db},
		{"history", "--db", db, "--json"},
		{"stats", "--db", db, "--json"},
	} {
		code, out, errOut := wasmpyCLI(t, "", args...)
		require.Equal(t, 0, code, "%v: %s", args, errOut)
		require.Equal(t, out, console.CleanText(out), "%v printed a control character", args)
		require.NotRegexp(t, `(?m)^FAKE`, out, "%v: a forged row", args)
		if !strings.Contains(strings.Join(args, " "), "json") {
			require.Contains(t, out, `echo\x1b[2J`, args)
		}
	}
	_, out, _ := wasmpyCLI(t, "", "history", "--db", db)
	require.Contains(t, out, `evil\x1b]0;PWNED\x07\x1b[2J (agent\nFAKE LINE)`)
	require.Equal(t, 2, strings.Count(out, "\n"), "a header and one row: %q", out)
	_, out, _ = wasmpyCLI(t, "", "history", "show", rec.ExecutionID, "--db", db)
	require.Contains(t, out, `exception\x1b[31m: Boom\u202e\x07`)
}
