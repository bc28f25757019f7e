package skills_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/stores"
	"github.com/wasmpy/wasmpy/skills"
)

// A directory of skill directories given one level too high gets a
// problem that says which directory to give.
func TestLoadOneLevelTooHigh(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"alpha", "beta"} {
		writeSkill(t, filepath.Join(root, "group", name), goodSkill(name))
	}
	reg, err := skills.LoadDir(context.Background(), root, skills.LoadOptions{Checker: testExecutor(t).Checker()})
	require.NoError(t, err)
	require.Empty(t, reg.Skills())
	require.Equal(t, []skills.Problem{{Path: filepath.Join(root, "group", "skill.yaml"),
		Reason: "missing, but group holds skill directories (alpha, beta): give " + filepath.Join(root, "group") + " as the skills directory"}},
		reg.Problems())
}

func bytesOf(files map[string]string) map[string][]byte {
	out := map[string][]byte{}
	for k, v := range files {
		out[k] = []byte(v)
	}
	return out
}

// A version registered where it loads but stored for a replica where it
// does not (an external_call skill, and no LLM endpoint here) is a
// problem, not served; Sync does not check it again until it changes.
func TestRegisteredRefusedHere(t *testing.T) {
	ctx := context.Background()
	st, err := stores.Open(ctx, filepath.Join(t.TempDir(), "p.db"))
	require.NoError(t, err)
	defer st.Close()
	files := goodSkill("asks")
	files["skill.yaml"] = strings.Replace(files["skill.yaml"], "[none]", "[external_call]", 1)
	require.NoError(t, st.RegisterSkill(ctx, &provenance.RegisteredSkill{Name: "asks", Version: "1.0.0", Files: bytesOf(files), RegisteredBy: "ops"}))
	require.NoError(t, st.RegisterSkill(ctx, &provenance.RegisteredSkill{Name: "plain", Version: "1.0.0", Files: bytesOf(goodSkill("plain")), RegisteredBy: "ops"}))

	reg, err := skills.Load(ctx, fstest.MapFS{}, skills.LoadOptions{Checker: testExecutor(t).Checker(), Registered: st})
	require.NoError(t, err)
	_, ok := reg.Get("asks")
	require.False(t, ok)
	plain, ok := reg.Get("plain")
	require.True(t, ok)
	require.Equal(t, "ops", plain.Registration.By)
	require.Equal(t, []skills.Problem{{Path: filepath.Join("(registered)", "asks", "1.0.0", "skill.yaml"), Skill: "asks",
		Reason: "safety_flags: external_call: refused, no LLM endpoint is configured for ask_llm"}}, reg.Problems())

	// Deleted in the store: Sync drops it, and its problem.
	require.NoError(t, st.DeleteSkill(ctx, "asks", "1.0.0", "ops"))
	require.NoError(t, st.SetSkillDisabled(ctx, "plain", "1.0.0", true, "ops"))
	require.NoError(t, reg.Sync(ctx))
	require.Empty(t, reg.Problems())
	v, ok := reg.Find("plain", "")
	require.True(t, ok)
	require.True(t, v.Disabled, "the store's state, after Sync")
	_, err = reg.Runnable(ctx, v.Skill)
	var se *skills.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, skills.CodeSkillDisabled, se.Code)
}

// Registering without a store is refused with its own code.
func TestRegisterWithoutStore(t *testing.T) {
	reg, err := skills.Load(context.Background(), fstest.MapFS{}, skills.LoadOptions{Checker: testExecutor(t).Checker()})
	require.NoError(t, err)
	_, err = reg.Register(context.Background(), bytesOf(goodSkill("x")), "ops")
	var se *skills.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, skills.CodeNoRegistration, se.Code)
}
