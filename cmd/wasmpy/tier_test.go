package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/internal/testing/llmtest"
	"github.com/wasmpy/wasmpy/provenance"
)

func TestTiersCommand(t *testing.T) {
	code, out, errOut := wasmpyCLI(t, "", "tiers")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `TIER\s+TIMEOUT\s+MEMORY\s+OUTPUT\s+FUEL\s+CAPABILITIES\s+IMPORTS\s+VALIDATION`, out)
	require.Regexp(t, `(?m)^sandbox\s+10s\s+64MiB\s+1MiB\s+1000000000\s+submit_result\s+\d+ modules\s+strict$`, out)
	require.Regexp(t, `(?m)^trusted\s+30s\s+256MiB\s+default\s+unmetered\s+read_file,write_file,list_files,search_files,ask_llm,embed,submit_result\s+any\s+syntax$`, out)

	code, out, errOut = wasmpyCLI(t, "", "tiers", "--json")
	require.Equal(t, 0, code, errOut)
	var list []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	require.Len(t, list, 3)
	require.Equal(t, "testing", list[1]["name"])
	require.EqualValues(t, 20000, list[1]["limits"].(map[string]any)["timeout_ms"])

	bad := writeScript(t, "tiers.yaml", "tiers:\n  - name: x\n    extends: sandbox\n    limits: {timeout: 5x}\n    validation: lax\n")
	code, _, errOut = wasmpyCLI(t, "", "tiers", "--tiers", bad)
	require.Equal(t, exitUsage, code)
	require.Equal(t, "wasmpy: --tiers: "+bad+":4: tiers[0].limits.timeout: \"5x\": want a positive duration such as 500ms, 5s or 1m\n"+
		"wasmpy: --tiers: "+bad+":5: tiers[0].validation: \"lax\": want strict, standard or syntax\n", errOut)
	code, _, errOut = wasmpyCLI(t, "", "exec", "--tiers", bad, "-c", "1")
	require.Equal(t, exitUsage, code, "every command refuses a bad file")
	require.Contains(t, errOut, "tiers[0].validation")
	code, _, errOut = wasmpyCLI(t, "", "tiers", "--tiers", filepath.Join(t.TempDir(), "none.yaml"))
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "--tiers: open ")

	// A token's maximum tier is one the tiers have.
	db := filepath.Join(t.TempDir(), "p.db")
	code, _, errOut = wasmpyCLI(t, "", "token", "create", "ci", "--max-tier", "trustd", "--db", db)
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, `--max-tier: no such tier "trustd" (have sandbox, testing, trusted)`)
	custom := writeScript(t, "tiers.yaml", "tiers:\n  - {name: ci, extends: sandbox}\n")
	code, _, errOut = wasmpyCLI(t, "", "token", "create", "ci", "--max-tier", "ci", "--tiers", custom, "--db", db)
	require.Equal(t, 0, code, errOut)
}

// exec runs in trusted by default; --tier holds it to another tier, whose
// limits, grants and imports bind; the tier is in --json and the record.
func TestExecTier(t *testing.T) {
	requireCapabilities(t)
	db := filepath.Join(t.TempDir(), "p.db")
	spin := "s = 0\nfor i in range(3_000_000): s += i\nsubmit_result(s)"
	code, out, errOut := wasmpyCLI(t, "", "exec", "--json", "--timeout", "10m", "-c", spin)
	require.Equal(t, 0, code, errOut)
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Equal(t, "trusted", res["tier"])

	// A loop without end spends sandbox's fuel, whatever an iteration costs.
	code, out, _ = wasmpyCLI(t, "", "exec", "--json", "--record", "--db", db, "--tier", "sandbox", "--timeout", "10m", "-c", "s = 0\nwhile True: s += 1")
	require.Equal(t, 123, code, "out of fuel")
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Equal(t, "sandbox", res["tier"])
	require.Equal(t, "fuel", res["error"].(map[string]any)["kind"])
	code, out, _ = wasmpyCLI(t, "", "history", "--json", "--db", db)
	require.Equal(t, 0, code)
	var recs []provenance.Record
	require.NoError(t, json.Unmarshal([]byte(out), &recs))
	require.Len(t, recs, 1)
	require.Equal(t, "sandbox", recs[0].Tier)
	require.Equal(t, "fuel", recs[0].Outcome)
	require.Equal(t, uint64(1_000_000_000), recs[0].Limits.Fuel)

	code, _, errOut = wasmpyCLI(t, "", "exec", "--tier", "sandbox", "-c", "import os")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "ImportError: import of 'os' is not allowed")
	code, _, errOut = wasmpyCLI(t, "", "exec", "--tier", "sandbox", "-c", "read_file('x')")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "PermissionError")
	code, _, errOut = wasmpyCLI(t, "", "exec", "--tier", "testing", "--workspace", t.TempDir(), "-c", "print(list_files('*'))")
	require.Equal(t, 0, code, errOut)

	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--tier", "sandbox", "--grant", "read_file"}, "--grant read_file: tier sandbox does not grant it"},
		{[]string{"--tier", "root"}, `--tier: no such tier "root" (have sandbox, testing, trusted)`},
	} {
		code, _, errOut := wasmpyCLI(t, "", append(append([]string{"exec"}, tc.args...), "-c", "1")...)
		require.Equal(t, exitUsage, code, errOut)
		require.Contains(t, errOut, tc.msg)
	}

	// A tier of a file, in WASMPY_TIERS.
	custom := writeScript(t, "tiers.yaml", "tiers:\n  - {name: tiny, extends: trusted, limits: {memory: 48MiB}}\n")
	t.Setenv("WASMPY_TIERS", custom)
	code, out, errOut = wasmpyCLI(t, "", "exec", "--json", "-c", "b = bytearray(100 << 20)")
	require.Equal(t, 121, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Equal(t, "tiny", res["tier"], "the file's most trusted tier is exec's default")
	require.Equal(t, "memory", res["error"].(map[string]any)["kind"])
}

// gen and def run under sandbox by default: its validation refuses what
// trusted's allows, and the tier is in --json.
func TestGenTier(t *testing.T) {
	srv := llmtest.New(t, pyReply("import os\nsubmit_result(os.sep)"))
	code, out, errOut := wasmpyCLI(t, "", append([]string{"gen", "--json", "--attempts", "1"}, append(codegenArgs(t, srv), "the separator")...)...)
	require.Equal(t, 1, code, errOut)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Equal(t, "sandbox", got["tier"])
	require.Equal(t, "invalid", got["error"].(map[string]any)["kind"])

	srv.Enqueue(pyReply("import os\nsubmit_result(os.sep)"))
	code, out, errOut = wasmpyCLI(t, "", append([]string{"gen", "--json", "--tier", "trusted", "--no-cache"}, append(codegenArgs(t, srv), "the separator")...)...)
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Equal(t, "trusted", got["tier"])
	require.Equal(t, "/", got["output"])

	srv.Enqueue(pyReply("def add(a, b):\n    return a + b"))
	code, out, errOut = wasmpyCLI(t, "", append([]string{"def", "--json", "--tier", "testing", "--no-cache", "--args", "[1, 2]"}, append(codegenArgs(t, srv), addSig)...)...)
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Equal(t, "testing", got["tier"])
	require.EqualValues(t, 3, got["value"])
}

func TestNetAndSkillTier(t *testing.T) {
	requireCapabilities(t)
	code, out, errOut := wasmpyCLI(t, "", "net", "run", "--json", "--tier", "sandbox", pnml("simple_print.yaml"))
	require.Equal(t, 0, code, errOut)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Equal(t, "sandbox", got["tier"])

	code, out, errOut = wasmpyCLI(t, "", "skill", "run", "--json", "--tier", "sandbox", "--skills", testSkills, "echo", "--args", `{"message": "m"}`)
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Equal(t, "sandbox", got["provenance"].(map[string]any)["tier"])
	require.Equal(t, "sandbox", got["run"].(map[string]any)["tier"])
	code, _, errOut = wasmpyCLI(t, "", "skill", "run", "--tier", "root", "--skills", testSkills, "echo", "--args", `{"message": "m"}`)
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, `tier: no such tier "root"`)
}
