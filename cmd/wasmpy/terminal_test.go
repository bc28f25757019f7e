package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/stores"
)

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"agent-7":                     "agent-7",
		"Zoë O'Brien <z@example.com>": "Zoë O'Brien <z@example.com>",
		"evil\x1b]0;PWNED\x07\x1b[2J": `evil\x1b]0;PWNED\x07\x1b[2J`,
		"agent\nFAKE LINE":            `agent\nFAKE LINE`,
		"a\tb\rc\x00":                 `a\tb\rc\x00`,
		"csi\u009b2J":                 `csi\u009b2J`,
		"abc\u202edcba":               `abc\u202edcba`,
		"tag\U000e0041":               `tag\U000e0041`,
		"bad\xffutf8":                 `bad\xffutf8`,
		"del\x7f":                     `del\x7f`,
		"line\u2028sep":               `line\u2028sep`,
	} {
		require.Equal(t, want, clean(in), "%q", in)
	}
	require.Equal(t, "one\n\ttwo\\x1b[2J\n", cleanText("one\n\ttwo\x1b[2J\n"))
}

// JSON the CLI prints carries no character a terminal would obey, and
// decodes to the same value.
func TestWriteIndentedEscapes(t *testing.T) {
	v := map[string]string{"a": "evil\x1b]0;PWNED\x07", "b": "csi\u009b2J", "c": "rtl\u202e", "d": "tag\U000e0041", "e": "Zoë"}
	var buf bytes.Buffer
	require.NoError(t, writeIndented(&buf, v))
	out := buf.String()
	require.True(t, plain(out, true), "%q", out)
	require.Contains(t, out, `\u009b`)
	require.Contains(t, out, `\udb40\udc41`)
	require.Contains(t, out, "Zoë")
	var back map[string]string
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	require.Equal(t, v, back)
}

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
		require.True(t, plain(out, true), "%v printed a control character: %q", args, out)
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
