package skills_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/skills"
)

// Every problem of a skill.yaml is reported at once, in the author's terms,
// never Go's.
func TestManifestProblemsAtOnce(t *testing.T) {
	dir := t.TempDir()
	files := goodSkill("s")
	files["skill.yaml"] = "name: s\nversion: 1\ntimeout: 3s\nsafety_flags: none\nlimits:\n  cpu: 2\n  fuel: -1\n"
	writeSkill(t, filepath.Join(dir, "s"), files)
	reg, err := skills.LoadDir(context.Background(), dir, skills.LoadOptions{Checker: testExecutor(t).Checker()})
	require.NoError(t, err)
	var reasons []string
	for _, p := range reg.Problems() {
		require.NotContains(t, p.Reason, "skills.manifest")
		require.NotContains(t, p.Reason, "[]string")
		require.NotContains(t, p.Reason, "uint64")
		reasons = append(reasons, p.Reason)
	}
	require.Equal(t, []string{
		"line 3: timeout: unknown field (the fields are name, version, description, handler, safety_flags, requires_approval, tags, requires, limits)",
		"line 4: safety_flags: want a list of strings, got a string (none)",
		"line 6: limits.cpu: unknown field (the fields are timeout, memory, fuel)",
		"line 7: limits.fuel: want a whole number, 0 or more, got a number (-1)",
		`version "1": not a semantic version (MAJOR.MINOR.PATCH, e.g. 1.0.0)`,
		"description: missing",
		"handler: missing (module.function, e.g. handler.summarize)",
	}, reasons, "safety_flags is not also reported missing")
}

// A skill's own directory given where the directory of skills is expected
// loads that skill, and only it.
func TestLoadDirOfOneSkill(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, filepath.Join(dir, "a"), goodSkill("a"))
	writeSkill(t, filepath.Join(dir, "b"), goodSkill("b"))
	reg, err := skills.LoadDir(context.Background(), filepath.Join(dir, "a"), skills.LoadOptions{Checker: testExecutor(t).Checker()})
	require.NoError(t, err)
	require.Empty(t, reg.Problems())
	require.Len(t, reg.Skills(), 1)
	require.Equal(t, "a", reg.Skills()[0].Name)
	require.Equal(t, filepath.Join(dir, "a"), reg.Skills()[0].Dir)
}
