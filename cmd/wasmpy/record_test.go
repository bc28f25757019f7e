package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/internal/testing/llmtest"
	"github.com/wasmpy/wasmpy/provenance"
)

// Every kind of CLI run keeps a record with --record, into one store:
// exec, a session turn, gen and def (with codegen's outcome), net build and
// net run, a skill. Without --record, none writes the store.
func TestRecordEveryKind(t *testing.T) {
	requireCapabilities(t)
	db := filepath.Join(t.TempDir(), "p.db")
	idRE := regexp.MustCompile(`provenance: ([0-9a-f-]{36})\n`)
	run := func(wantCode int, args ...string) string {
		t.Helper()
		code, out, errOut := wasmpyCLI(t, "", args...)
		require.Equal(t, wantCode, code, "stdout: %s\nstderr: %s", out, errOut)
		m := idRE.FindStringSubmatch(errOut)
		require.NotNil(t, m, "no provenance id in: %s", errOut)
		return m[1]
	}
	show := func(id string) provenance.Record {
		t.Helper()
		code, out, errOut := wasmpyCLI(t, "", "history", "show", "--json", "--db", db, id)
		require.Equal(t, 0, code, errOut)
		var rec provenance.Record
		require.NoError(t, json.Unmarshal([]byte(out), &rec))
		require.Equal(t, id, rec.ExecutionID)
		require.NotNil(t, rec.FinishedAt)
		return rec
	}

	// Off by default, for every kind.
	srv := llmtest.New(t, pyReply(genGood))
	code, _, errOut := wasmpyCLI(t, "", append([]string{"gen", "--db", db}, append(codegenArgs(t, srv), "submit pi")...)...)
	require.Equal(t, 0, code, errOut)
	code, _, errOut = wasmpyCLI(t, "", "net", "run", "--db", db, pnml("simple_print.yaml"))
	require.Equal(t, 0, code, errOut)
	require.NoFileExists(t, db, "the CLI records only with --record")

	execID := run(0, "exec", "--record", "--db", db, "-c", "print(1)")
	turnID := run(0, "exec", "--record", "--db", db, "--session", filepath.Join(t.TempDir(), "s.session"), "-c", "x = 1")

	// gen: the first reply is refused, the second runs; the record has the
	// code that ran, and two attempts.
	srv.Enqueue(pyReply("import os\nsubmit_result(os.getcwd())"), pyReply(genGood))
	genID := run(0, append([]string{"gen", "--record", "--db", db, "--no-cache"}, append(codegenArgs(t, srv), "submit", "pi")...)...)
	rec := show(genID)
	require.Equal(t, provenance.KindGen, rec.Kind)
	require.Equal(t, provenance.OutcomeOK, rec.Outcome)
	require.Equal(t, provenance.HashBytes([]byte(genGood+"\n")), rec.CodeHash)
	require.Equal(t, &provenance.Codegen{Attempts: 2, Validated: true}, rec.Codegen)
	h, _ := provenance.Hash([]byte(`{"task": "submit pi"}`))
	require.Equal(t, h, rec.InputsHash, "the task's hash, never the task")
	h, _ = provenance.Hash([]byte(`{"pi": 3.14}`))
	require.Equal(t, h, rec.OutputsHash)

	// A generation that gives up is recorded with the last attempt's outcome.
	srv.Enqueue(pyReply("import os"), pyReply("import os"))
	failedGen := run(1, append([]string{"gen", "--record", "--db", db, "--no-cache", "--attempts", "2"}, append(codegenArgs(t, srv), "cwd")...)...)
	rec = show(failedGen)
	require.Equal(t, "invalid", rec.Outcome)
	require.Equal(t, &provenance.Codegen{Attempts: 2, Validated: false}, rec.Codegen)

	srv.Enqueue(pyReply("def add(a, b):\n    return a + b"))
	const sig = "def add(a: int, b: int) -> int:\n    \"\"\"Return a + b.\n\n    >>> add(2, 3)\n    5\n    \"\"\""
	defID := run(0, append([]string{"def", "--record", "--db", db, "--no-cache", "--args", "[2, 3]"}, append(codegenArgs(t, srv), sig)...)...)
	rec = show(defID)
	require.Equal(t, provenance.KindDef, rec.Kind)
	require.Equal(t, provenance.OutcomeOK, rec.Outcome)
	require.Equal(t, 1, rec.Codegen.Attempts)
	require.True(t, rec.Codegen.Validated)
	require.Equal(t, 1, rec.Codegen.TestsPassed, "the signature's doctest example")
	require.Zero(t, rec.Codegen.TestsFailed)

	netRun := run(0, "net", "run", "--record", "--db", db, pnml("simple_print.yaml"))
	netBuild := run(0, "net", "build", "--record", "--db", db, "--out", filepath.Join(t.TempDir(), "art"), pnml("countdown.yaml"))
	netBad := run(exitUsage, "net", "build", "--record", "--db", db, "--out", filepath.Join(t.TempDir(), "bad"), pnml("bad_inscription.yaml"))
	for id, want := range map[string]struct {
		outcome   string
		validated bool
	}{netRun: {"ok", true}, netBuild: {"ok", true}, netBad: {"invalid", false}} {
		rec := show(id)
		require.Equal(t, provenance.KindNet, rec.Kind)
		require.Equal(t, want.outcome, rec.Outcome, id)
		require.Equal(t, want.validated, rec.Codegen.Validated, id)
		require.Len(t, rec.CodeHash, 64, "the net file's hash")
	}

	skillID := run(0, "skill", "run", "--record", "--skills", testSkills, "--db", db, "echo", "--args", `{"message": "m"}`)

	for id, kind := range map[string]string{execID: provenance.KindExec, turnID: provenance.KindSession, skillID: provenance.KindSkill} {
		rec := show(id)
		require.Equal(t, kind, rec.Kind)
		require.Equal(t, provenance.OutcomeOK, rec.Outcome)
		require.Nil(t, rec.Codegen)
	}

	// history and stats filter by each kind.
	for kind, n := range map[string]int{"exec": 1, "session": 1, "gen": 2, "def": 1, "net": 3, "skill": 1} {
		code, out, errOut := wasmpyCLI(t, "", "history", "--json", "--db", db, "--kind", kind)
		require.Equal(t, 0, code, errOut)
		var recs []provenance.Record
		require.NoError(t, json.Unmarshal([]byte(out), &recs))
		require.Len(t, recs, n, kind)
		code, out, errOut = wasmpyCLI(t, "", "stats", "--json", "--db", db, "--kind", kind)
		require.Equal(t, 0, code, errOut)
		var stats []provenance.Stats
		require.NoError(t, json.Unmarshal([]byte(out), &stats))
		require.Len(t, stats, 1, kind)
		require.Equal(t, n, stats[0].Total, kind)
	}
	code, out, errOut := wasmpyCLI(t, "", "stats", "--json", "--db", db, "--kind", "gen")
	require.Equal(t, 0, code, errOut)
	var stats []provenance.Stats
	require.NoError(t, json.Unmarshal([]byte(out), &stats))
	require.Equal(t, 0.5, stats[0].SuccessRate)
	require.Equal(t, map[string]int{"ok": 1, "invalid": 1}, stats[0].Outcomes)
}
