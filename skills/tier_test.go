package skills_test

import (
	"context"
	"sort"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/skills"
	"github.com/wasmpy/wasmpy/tiers"
)

// A skill.yaml's tier is checked at load: it must exist, grant what the
// safety flags ask for, and hold the skill's own limits. Every problem is
// reported.
func TestSkillTierAtLoad(t *testing.T) {
	ex := testExecutor(t)
	schema := []byte(`{"input": {"type": "object", "additionalProperties": false}, "output": {}}`)
	handler := []byte("def run():\n    return 1\n")
	fsys := fstest.MapFS{}
	for name, yaml := range map[string]string{
		"ok":      "safety_flags: [none]\ntier: sandbox\n",
		"unknown": "safety_flags: [none]\ntier: root\n",
		"files":   "safety_flags: [file_system]\ntier: sandbox\n",
		"slow":    "safety_flags: [none]\ntier: sandbox\nlimits: {timeout: 1m, memory: 128MiB, fuel: 2000000000}\n",
	} {
		fsys[name+"/skill.yaml"] = &fstest.MapFile{Data: []byte("name: " + name + "\nversion: 1.0.0\ndescription: d\nhandler: handler.run\n" + yaml)}
		fsys[name+"/schema.json"] = &fstest.MapFile{Data: schema}
		fsys[name+"/handler.py"] = &fstest.MapFile{Data: handler}
	}
	reg, err := skills.Load(context.Background(), fsys, skills.LoadOptions{Checker: ex.Checker()})
	require.NoError(t, err)
	var reasons []string
	for _, p := range reg.Problems() {
		reasons = append(reasons, p.String())
	}
	sort.Strings(reasons)
	require.Equal(t, []string{
		`files/skill.yaml: tier "sandbox": does not grant list_files, which the safety flags ask for`,
		`slow/skill.yaml: limits.fuel 2000000000: above tier sandbox's 1000000000`,
		`slow/skill.yaml: limits.memory 134217728: above tier sandbox's 67108864 bytes`,
		`slow/skill.yaml: limits.timeout 1m0s: above tier sandbox's 10s`,
		`unknown/skill.yaml: tier "root": no such tier (have sandbox, testing, trusted)`,
	}, reasons)
	ok, found := reg.Get("ok")
	require.True(t, found)
	require.Equal(t, tiers.Sandbox, ok.Tier)
	require.Equal(t, tiers.Sandbox, ex.Describe(ok).Tier)

	// Custom tiers: a skill names one of them.
	custom, err := tiers.Parse([]byte("tiers:\n  - {name: tight, extends: sandbox}\n  - {name: wide, extends: trusted}\n"))
	require.NoError(t, err)
	fsys["ok/skill.yaml"].Data = []byte("name: ok\nversion: 1.0.0\ndescription: d\nhandler: handler.run\nsafety_flags: [none]\ntier: tight\n")
	reg, err = skills.Load(context.Background(), fstest.MapFS{"ok/skill.yaml": fsys["ok/skill.yaml"], "ok/schema.json": fsys["ok/schema.json"],
		"ok/handler.py": fsys["ok/handler.py"]}, skills.LoadOptions{Checker: ex.Checker(), Tiers: custom})
	require.NoError(t, err)
	require.Empty(t, reg.Problems())
}
