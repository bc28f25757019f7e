package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/stores"
)

func TestHistoryAndStats(t *testing.T) {
	requireCapabilities(t)
	db := filepath.Join(t.TempDir(), "p.db")
	runSkill := func(args ...string) {
		t.Helper()
		wasmpyCLI(t, "", append([]string{"skill", "run", "--record", "--skills", testSkills, "--db", db, "--actor-id", "tester"}, args...)...)
	}
	runSkill("echo", "--args", `{"message": "a"}`)
	runSkill("echo", "--args", `{"message": "b"}`)
	runSkill("bad_output")
	runSkill("echo", "--args", `{"message": 1}`) // refused: not an execution, not recorded

	code, out, errOut := wasmpyCLI(t, "", "history", "--db", db)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `STARTED\s+EXECUTION ID\s+KIND\s+SKILL\s+VERSION\s+OUTCOME\s+DURATION\s+ACTOR`, out)
	require.Regexp(t, `(?m)^\S+ \S+\s+[0-9a-f-]{36}\s+skill\s+bad_output\s+1\.0\.0\s+invalid_output\s+\S+ms\s+tester \(cli\)$`, out)
	require.Len(t, regexp.MustCompile(`(?m)\s+echo\s+0\.1\.0\s+ok\s`).FindAllString(out, -1), 2)

	code, out, _ = wasmpyCLI(t, "", "history", "--db", db, "--json", "--skill", "echo", "--limit", "1")
	require.Equal(t, 0, code)
	var recs []provenance.Record
	require.NoError(t, json.Unmarshal([]byte(out), &recs))
	require.Len(t, recs, 1)
	require.Equal(t, "echo", recs[0].Skill)

	code, out, _ = wasmpyCLI(t, "", "history", "--db", db, "--json", "--outcome", "invalid_output", "--since", "1d")
	require.Equal(t, 0, code)
	require.NoError(t, json.Unmarshal([]byte(out), &recs))
	require.Len(t, recs, 1)
	id := recs[0].ExecutionID

	code, out, _ = wasmpyCLI(t, "", "history", "show", id, "--db", db)
	require.Equal(t, 0, code)
	require.Contains(t, out, "execution_id:  "+id)
	require.Contains(t, out, "outcome:       invalid_output: the output of handler.run does not match the schema")
	require.Regexp(t, `code_hash:\s+[0-9a-f]{64}`, out)
	require.Regexp(t, `interpreter:\s+\S+ \S+ sha256:[0-9a-f]{64}`, out)
	code, out, _ = wasmpyCLI(t, "", "history", "show", "--json", "--db", db, id)
	require.Equal(t, 0, code)
	var rec provenance.Record
	require.NoError(t, json.Unmarshal([]byte(out), &rec))
	require.Equal(t, recs[0], rec)

	// A unique prefix of the id is enough; one that is not unique is refused.
	code, out, errOut = wasmpyCLI(t, "", "history", "show", "--db", db, id[:8])
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "execution_id:  "+id)
	require.Contains(t, out, "kind:          skill")
	code, _, errOut = wasmpyCLI(t, "", "history", "show", "--db", db, id[:4]+"x")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "not an execution id")
	st, err := stores.Open(context.Background(), db)
	require.NoError(t, err)
	for _, twin := range []string{"abcd0000-0000-4000-8000-000000000001", "abcd0000-0000-4000-8000-000000000002", "abcd0000-0000-4000-8000-000000000003",
		"abcd0000-0000-4000-8000-000000000004", "abcd0000-0000-4000-8000-000000000005", "abcd0000-0000-4000-8000-000000000006"} {
		require.NoError(t, st.Begin(context.Background(), &provenance.Record{ExecutionID: twin, Kind: provenance.KindExec,
			Outcome: provenance.OutcomeRunning, StartedAt: time.Now().UTC(), HostCalls: []provenance.HostCall{}}))
	}
	require.NoError(t, st.Close())
	code, _, errOut = wasmpyCLI(t, "", "history", "show", "--db", db, "abcd0000")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "abcd0000 is ambiguous: 6 executions start with it (abcd0000-0000-4000-8000-00000000000")
	require.Contains(t, errOut, ", ...); give more of the id")
	code, _, errOut = wasmpyCLI(t, "", "history", "show", "--db", db, "abcd0000-0000-4000-8000-00000000000")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "6 executions start with it")
	code, out, errOut = wasmpyCLI(t, "", "history", "show", "--db", db, "abcd0000-0000-4000-8000-000000000006")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "abcd0000-0000-4000-8000-000000000006")
	code, out, errOut = wasmpyCLI(t, "", "history", "show", "--db", db, "abcd0000-0000-4000-8000-0000000000")
	require.Equal(t, exitUsage, code, out)

	// --kind filters.
	code, out, _ = wasmpyCLI(t, "", "history", "--db", db, "--json", "--kind", "exec")
	require.Equal(t, 0, code)
	require.NoError(t, json.Unmarshal([]byte(out), &recs))
	require.Len(t, recs, 6)
	code, out, _ = wasmpyCLI(t, "", "stats", "--db", db, "--json", "--kind", "skill")
	require.Equal(t, 0, code)
	var kinds []provenance.Stats
	require.NoError(t, json.Unmarshal([]byte(out), &kinds))
	require.Len(t, kinds, 2, "bad_output and echo, not the exec records")

	code, out, errOut = wasmpyCLI(t, "", "stats", "--db", db)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `KIND\s+SKILL\s+RUNS\s+SUCCESS\s+P50\s+P90\s+P99\s+OUTCOMES`, out)
	require.Regexp(t, `(?m)^skill\s+bad_output\s+1\s+0\.0%\s+\S+\s+\S+\s+\S+\s+invalid_output=1$`, out)
	require.Regexp(t, `(?m)^skill\s+echo\s+2\s+100\.0%\s+\S+ms\s+\S+ms\s+\S+ms\s+ok=2$`, out)
	code, out, _ = wasmpyCLI(t, "", "stats", "--db", db, "--json", "--skill", "echo")
	require.Equal(t, 0, code)
	var stats []provenance.Stats
	require.NoError(t, json.Unmarshal([]byte(out), &stats))
	require.Len(t, stats, 1)
	require.Equal(t, 2, stats[0].Total)
	require.Equal(t, 1.0, stats[0].SuccessRate)
	require.Greater(t, stats[0].P90MS, 0.0)

	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"history", "--db", db, "--since", "last tuesday"}, exitUsage, `--since "last tuesday"`},
		{[]string{"history", "--db", db, "--limit", "-1"}, exitUsage, "--limit"},
		{[]string{"stats", "--db", db, "--kind", "exe"}, exitUsage, `--kind "exe": want one of skill, exec, session, gen, def, net`},
		{[]string{"history", "--db", db, "extra"}, exitUsage, "did you mean: history show ID"},
		{[]string{"history", "show", "--db", db, "not-an-id"}, exitUsage, "not an execution id"},
		{[]string{"history", "show", "--db", db, provenance.NewID()}, 1, "no execution"},
		{[]string{"history", "show", "--db", db}, exitUsage, "missing ID"},
		{[]string{"stats", "--db", db, "extra"}, exitUsage, "unexpected argument"},
		{[]string{"stats", "--db", t.TempDir()}, exitWasmpy, "provenance"},
		// A URL is never taken for a file path (it used to create ./mysql:/).
		{[]string{"history", "--db", "mysql://u@h/db"}, exitUsage, `--db: unsupported database: URL scheme "mysql"`},
		{[]string{"stats", "--db", "sqlite://p.db"}, exitUsage, `URL scheme "sqlite"`},
		{[]string{"history", "show", "--db", "file:p.db", provenance.NewID()}, exitUsage, "plain path"},
	} {
		code, _, errOut := wasmpyCLI(t, "", tc.args...)
		require.Equal(t, tc.code, code, "%v: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.msg, tc.args)
	}
	for _, made := range []string{"mysql:", "sqlite:", "file:p.db"} {
		require.NoFileExists(t, made)
		require.NoDirExists(t, made)
	}
}

// TestHelperCLI is not a test: the kill test runs the test binary as the
// CLI through it.
func TestHelperCLI(t *testing.T) {
	if os.Getenv("WASMPY_TEST_CLI") != "1" {
		return
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(run(context.Background(), append([]string{"wasmpy"}, args...), os.Stdin, os.Stdout, os.Stderr))
}

// A process killed mid-run leaves its record running; the next start marks
// it interrupted, and everything committed before survives.
func TestHistorySurvivesKill(t *testing.T) {
	requireCapabilities(t)
	db := filepath.Join(t.TempDir(), "p.db")
	code, _, errOut := wasmpyCLI(t, "", "skill", "run", "--record", "echo", "--skills", testSkills, "--db", db, "--args", `{"message": "before"}`)
	require.Equal(t, 0, code, errOut)

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCLI$", "--", "skill", "run", "--record", "spin", "--skills", testSkills, "--db", db)
	cmd.Env = append(os.Environ(), "WASMPY_TEST_CLI=1")
	require.NoError(t, cmd.Start())
	defer cmd.Process.Kill()

	st, err := stores.Open(context.Background(), db)
	require.NoError(t, err)
	var running *provenance.Record
	require.Eventually(t, func() bool {
		recs, err := st.List(context.Background(), provenance.Filter{Skill: "spin"})
		require.NoError(t, err)
		if len(recs) == 1 {
			running = recs[0]
		}
		return running != nil
	}, time.Minute, 20*time.Millisecond)
	require.NoError(t, st.Close())
	require.Equal(t, provenance.OutcomeRunning, running.Outcome, "a live process's record stays running when another opens the store")

	require.NoError(t, cmd.Process.Kill())
	cmd.Wait()

	code, out, errOut := wasmpyCLI(t, "", "history", "--db", db, "--json")
	require.Equal(t, 0, code, errOut)
	var recs []provenance.Record
	require.NoError(t, json.Unmarshal([]byte(out), &recs))
	require.Len(t, recs, 2)
	require.Equal(t, "spin", recs[0].Skill)
	require.Equal(t, provenance.OutcomeInterrupted, recs[0].Outcome)
	require.Nil(t, recs[0].FinishedAt)
	require.Equal(t, "echo", recs[1].Skill)
	require.Equal(t, provenance.OutcomeOK, recs[1].Outcome, "what was committed before the kill is intact")

	code, out, _ = wasmpyCLI(t, "", "stats", "--db", db)
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^skill\s+spin\s+1\s+0\.0%\s+-\s+-\s+-\s+interrupted=1$`, out)
}

// exec --record keeps a record of kind exec, which history and stats show
// by kind; without the flag nothing is recorded.
func TestExecRecord(t *testing.T) {
	requireCapabilities(t)
	db := filepath.Join(t.TempDir(), "p.db")
	code, _, errOut := wasmpyCLI(t, "", "exec", "--db", db, "-c", "print(1)")
	require.Equal(t, 0, code, errOut)
	require.NoFileExists(t, db, "off by default")

	code, out, errOut := wasmpyCLI(t, "", "exec", "--record", "--db", db, "-c", "import sys\nsubmit_result(sys.argv[1:])", "a")
	require.Equal(t, 0, code, errOut)
	require.Empty(t, out)
	m := regexp.MustCompile(`wasmpy: provenance: ([0-9a-f-]{36})\n`).FindStringSubmatch(errOut)
	require.NotNil(t, m, errOut)
	code, _, _ = wasmpyCLI(t, "", "exec", "--record", "--db", db, "-c", "1/0")
	require.Equal(t, 1, code)

	code, out, _ = wasmpyCLI(t, "", "history", "show", "--json", "--db", db, m[1])
	require.Equal(t, 0, code)
	var rec provenance.Record
	require.NoError(t, json.Unmarshal([]byte(out), &rec))
	require.Equal(t, provenance.KindExec, rec.Kind)
	require.Equal(t, provenance.OutcomeOK, rec.Outcome)
	require.Equal(t, provenance.HashBytes([]byte("import sys\nsubmit_result(sys.argv[1:])")), rec.CodeHash)
	h, _ := provenance.Hash([]byte(`{"args": ["a"]}`))
	require.Equal(t, h, rec.InputsHash)
	h, _ = provenance.Hash([]byte(`["a"]`))
	require.Equal(t, h, rec.OutputsHash)
	require.Equal(t, "cli", rec.ActorType)

	code, out, _ = wasmpyCLI(t, "", "stats", "--json", "--db", db, "--kind", "exec")
	require.Equal(t, 0, code)
	var stats []provenance.Stats
	require.NoError(t, json.Unmarshal([]byte(out), &stats))
	require.Len(t, stats, 1)
	require.Equal(t, 2, stats[0].Total)
	require.Equal(t, 0.5, stats[0].SuccessRate)
	require.Equal(t, map[string]int{"ok": 1, "exception": 1}, stats[0].Outcomes)
}

// A run of no skill is listed under its kind's own label: a gen run is
// (gen), not (exec).
func TestHistoryLabelsRunsOfNoSkillByKind(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	st, err := stores.Open(context.Background(), db)
	require.NoError(t, err)
	for i, kind := range []string{provenance.KindGen, provenance.KindDef, provenance.KindExec, provenance.KindNet} {
		rec := &provenance.Record{ExecutionID: fmt.Sprintf("abcd0000-0000-4000-8000-00000000000%d", i), Kind: kind,
			Outcome: provenance.OutcomeRunning, StartedAt: time.Now().UTC(), HostCalls: []provenance.HostCall{}}
		require.NoError(t, st.Begin(context.Background(), rec))
		rec.Outcome = provenance.OutcomeOK
		require.NoError(t, st.Finish(context.Background(), rec))
	}
	require.NoError(t, st.Close())
	code, out, errOut := wasmpyCLI(t, "", "history", "--db", db)
	require.Equal(t, 0, code, errOut)
	for _, kind := range []string{"gen", "def", "exec", "net"} {
		require.Regexp(t, `(?m)\s`+kind+`\s+\(`+kind+`\)\s`, out)
	}
	code, out, errOut = wasmpyCLI(t, "", "stats", "--db", db)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^gen\s+\(gen\)\s+1\s`, out)
	code, out, errOut = wasmpyCLI(t, "", "history", "show", "--db", db, "abcd0000-0000-4000-8000-000000000000")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `skill:\s+\(gen\)`, out)
}
