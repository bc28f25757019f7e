package skills_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/internal/testing/skilltest"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/skills"
)

// The package's shared helpers live in internal/testing/skilltest.
var (
	testExecutor = skilltest.Executor
	writeSkill   = skilltest.Write
	goodSkill    = skilltest.Good
)

const (
	goodYAML    = skilltest.GoodYAML
	goodSchema  = skilltest.GoodSchema
	goodHandler = skilltest.GoodHandler
)

func TestLoadExamples(t *testing.T) {
	ex := testExecutor(t)
	for name, load := range map[string]func() (*skills.Registry, error){
		"embedded": func() (*skills.Registry, error) {
			return skills.Load(context.Background(), skills.Examples(), skills.LoadOptions{Checker: ex.Checker()})
		},
		"dir": func() (*skills.Registry, error) {
			return skills.LoadDir(context.Background(), "examples", skills.LoadOptions{Checker: ex.Checker()})
		},
	} {
		t.Run(name, func(t *testing.T) {
			reg, err := load()
			require.NoError(t, err)
			require.Empty(t, reg.Problems())
			var names []string
			for _, s := range reg.Skills() {
				names = append(names, s.Name)
			}
			require.Equal(t, []string{"compact_memory", "extract_entities", "text_summarize"}, names)
			s, ok := reg.Get("text_summarize")
			require.True(t, ok)
			require.Equal(t, "1.0.0", s.Version)
			require.Equal(t, "handler.summarize", s.Handler)
			require.Len(t, s.CodeHash, 64)
			require.Equal(t, provenance.HashBytes([]byte(s.Source)), s.CodeHash)
			require.False(t, s.NeedsApproval())
			require.Equal(t, []wasmpy.Capability{wasmpy.SubmitResult}, s.Grants())
			info := testExecutor(t).Describe(s)
			require.Equal(t, int64(10000), info.Limits.TimeoutMS)
			require.Equal(t, uint64(128<<20), info.Limits.MemoryBytes)
		})
	}
}

// Every kind of broken skill is reported with its path and reason, and the
// good skill beside it still loads.
func TestLoadBrokenSkills(t *testing.T) {
	ex := testExecutor(t)
	yaml := func(old, new string) func(map[string]string) {
		return func(f map[string]string) { f["skill.yaml"] = strings.Replace(f["skill.yaml"], old, new, 1) }
	}
	set := func(file, content string) func(map[string]string) {
		return func(f map[string]string) { f[file] = content }
	}
	for _, tc := range []struct {
		name   string
		mutate func(map[string]string)
		file   string // the file the problem names
		reason string
	}{
		{"no skill.yaml", func(f map[string]string) { delete(f, "skill.yaml") }, "skill.yaml", "missing"},
		{"empty skill.yaml", set("skill.yaml", ""), "skill.yaml", "empty"},
		{"yaml syntax", set("skill.yaml", "name: [unclosed\n"), "skill.yaml", "line"},
		{"unknown field", yaml("handler:", "colour: red\nhandler:"), "skill.yaml", "colour: unknown field (the fields are name,"},
		{"wrong type", yaml("safety_flags: [none]", "safety_flags: [none]\nrequires_approval: [1]"), "skill.yaml", "requires_approval: want true or false, got a list"},
		{"missing name", yaml("name: broken\n", ""), "skill.yaml", "name: missing"},
		{"bad name", yaml("name: broken", "name: Bad Name"), "skill.yaml", `name "Bad Name"`},
		{"not semver", yaml("version: 1.0.0", "version: 1.0"), "skill.yaml", "not a semantic version"},
		{"no description", yaml("description: a test skill", "description: ' '"), "skill.yaml", "description: missing"},
		{"handler shape", yaml("handler: handler.run", "handler: run"), "skill.yaml", "want module.function"},
		{"handler file missing", yaml("handler: handler.run", "handler: other.run"), "other.py", "missing"},
		{"no safety flags", yaml("safety_flags: [none]", "tags: [x]"), "skill.yaml", "safety_flags: missing"},
		{"unknown flag", yaml("[none]", "[dangerous]"), "skill.yaml", `unknown flag "dangerous"`},
		{"network without hosts", yaml("[none]", "[network_access]"), "skill.yaml", "network_access: needs an http block naming the hosts"},
		{"http without the flag", yaml("safety_flags", "http: {hosts: [api.example.com]}\nsafety_flags"), "skill.yaml", "http: needs the network_access safety flag"},
		{"http bad host", yaml("safety_flags: [none]", "safety_flags: [network_access]\nhttp: {hosts: ['https://x/']}"), "skill.yaml", `http: host pattern "https://x/": want HOST`},
		{"http no hosts", yaml("safety_flags: [none]", "safety_flags: [network_access]\nhttp: {timeout: 5s}"), "skill.yaml", "http.hosts: missing"},
		{"http bad budget", yaml("safety_flags: [none]", "safety_flags: [network_access]\nhttp: {hosts: [a.example], max_bytes: lots}"), "skill.yaml", `http.max_bytes "lots"`},
		{"external call without LLM", yaml("[none]", "[external_call]"), "skill.yaml", "no LLM endpoint"},
		{"none with others", yaml("[none]", "[none, pii_risk]"), "skill.yaml", "cannot be combined"},
		{"flag twice", yaml("[none]", "[pii_risk, pii_risk]"), "skill.yaml", "listed twice"},
		{"bad tag", yaml("safety_flags", "tags: ['a b']\nsafety_flags"), "skill.yaml", "bad tag"},
		{"bad timeout", yaml("safety_flags", "limits: {timeout: soon}\nsafety_flags"), "skill.yaml", "limits.timeout"},
		{"long timeout", yaml("safety_flags", "limits: {timeout: 2h}\nsafety_flags"), "skill.yaml", "at most 10m0s"},
		{"huge memory", yaml("safety_flags", "limits: {memory: 8GiB}\nsafety_flags"), "skill.yaml", "at most 4GiB"},
		{"fuel past the meter", yaml("safety_flags", "limits: {fuel: 18446744073709551615}\nsafety_flags"), "skill.yaml", "limits.fuel 18446744073709551615: at most 9223372036854775807"},
		{"requires what no set has", yaml("safety_flags", "requires: ['pandas>=2.0']\nsafety_flags"), "skill.yaml",
			`requires: requirement "pandas>=2.0": the sandbox mounts no package set`},
		{"negative fuel", yaml("safety_flags", "limits: {fuel: -1}\nsafety_flags"), "skill.yaml", "limits.fuel: want a whole number, 0 or more, got a number (-1)"},
		{"no schema.json", func(f map[string]string) { delete(f, "schema.json") }, "schema.json", "missing"},
		{"schema not JSON", set("schema.json", "{input:"), "schema.json", "not a JSON object"},
		{"schema without output", set("schema.json", `{"input": {"type": "object"}}`), "schema.json", "output: missing"},
		{"schema extra key", set("schema.json", `{"input": {"type": "object"}, "output": {}, "extra": {}}`), "schema.json", `unknown key "extra"`},
		{"schema does not compile", set("schema.json", `{"input": {"type": "nonsense"}, "output": {}}`), "schema.json", "input: does not compile"},
		{"external ref", set("schema.json", `{"input": {"type": "object"}, "output": {"$ref": "https://example.com/s.json"}}`), "schema.json", "output: does not compile"},
		{"input not an object", set("schema.json", `{"input": {"type": "array"}, "output": {}}`), "schema.json", `"type": "object"`},
		{"handler syntax", set("handler.py", "def run(x:\n    pass\n"), "handler.py", "does not parse: line 1"},
		{"no function", set("handler.py", "def other(x):\n    pass\n"), "handler.py", "defines no top-level function 'run'"},
		{"nested function", set("handler.py", "class C:\n    def run(x):\n        pass\n"), "handler.py", "defines no top-level function"},
		{"async", set("handler.py", "async def run(x):\n    pass\n"), "handler.py", "is async"},
		{"positional only", set("handler.py", "def run(x, /):\n    pass\n"), "handler.py", "positional-only"},
		{"required param not required", set("handler.py", "def run(x, y):\n    pass\n"), "handler.py", `parameter "y" of run has no default`},
		{"schema not closed", set("schema.json", `{"input": {"type": "object", "properties": {"x": {}}, "required": ["x"]}, "output": {}}`), "handler.py", `"additionalProperties": false`},
		{"duplicate name", func(f map[string]string) {
			f["skill.yaml"] = strings.Replace(f["skill.yaml"], "name: broken", "name: good", 1)
		}, "skill.yaml", `name "good" is also used by`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeSkill(t, filepath.Join(dir, "good"), goodSkill("good"))
			files := goodSkill("broken")
			tc.mutate(files)
			writeSkill(t, filepath.Join(dir, "broken"), files)
			reg, err := skills.LoadDir(context.Background(), dir, skills.LoadOptions{Checker: ex.Checker()})
			require.NoError(t, err)
			probs := reg.Problems()
			require.NotEmpty(t, probs)
			_, ok := reg.Get("broken")
			require.False(t, ok, "a broken skill is not served")
			p := probs[0]
			if tc.name == "duplicate name" {
				require.Len(t, probs, 2, "both skills with the name are refused")
				require.Empty(t, reg.Skills())
			} else {
				_, ok := reg.Get("good")
				require.True(t, ok, "the good skill still loads: %v", probs)
				require.Len(t, reg.Skills(), 1)
			}
			require.Equal(t, filepath.Join(dir, "broken", tc.file), p.Path, "%v", probs)
			require.Contains(t, p.String(), tc.reason)
		})
	}
}

// A standard library module needs no package set.
func TestLoadRequiresStdlib(t *testing.T) {
	dir := t.TempDir()
	files := goodSkill("s")
	files["skill.yaml"] = strings.Replace(files["skill.yaml"], "safety_flags", "requires: [json]\nsafety_flags", 1)
	writeSkill(t, filepath.Join(dir, "s"), files)
	reg, err := skills.LoadDir(context.Background(), dir, skills.LoadOptions{Checker: testExecutor(t).Checker()})
	require.NoError(t, err)
	require.Empty(t, reg.Problems())
	s, ok := reg.Get("s")
	require.True(t, ok)
	require.Equal(t, []string{"json"}, testExecutor(t).Describe(s).Requires)
}

func TestLoadPropertyNotAParameter(t *testing.T) {
	dir := t.TempDir()
	files := goodSkill("s")
	files["handler.py"] = "def run(x, y=2):\n    pass\n"
	files["schema.json"] = `{"input": {"type": "object", "properties": {"x": {}, "z": {}}, "required": ["x"], "additionalProperties": false}, "output": {}}`
	writeSkill(t, filepath.Join(dir, "s"), files)
	reg, err := skills.LoadDir(context.Background(), dir, skills.LoadOptions{Checker: testExecutor(t).Checker()})
	require.NoError(t, err)
	require.Len(t, reg.Problems(), 1)
	require.Contains(t, reg.Problems()[0].Reason, `input property "z" is not a parameter of run`)

	// With **kwargs, any property is fine and the schema may stay open.
	files["handler.py"] = "def run(x, **rest):\n    pass\n"
	files["schema.json"] = `{"input": {"type": "object", "properties": {"x": {}, "z": {}}, "required": ["x"]}, "output": {}}`
	writeSkill(t, filepath.Join(dir, "s"), files)
	reg, err = skills.LoadDir(context.Background(), dir, skills.LoadOptions{Checker: testExecutor(t).Checker()})
	require.NoError(t, err)
	require.Empty(t, reg.Problems())
}

func TestLoadFlags(t *testing.T) {
	dir := t.TempDir()
	files := goodSkill("ext")
	files["skill.yaml"] = strings.Replace(files["skill.yaml"], "[none]", "[external_call, file_system, pii_risk]", 1)
	writeSkill(t, filepath.Join(dir, "ext"), files)
	files = goodSkill("approve")
	files["skill.yaml"] += "requires_approval: true\n"
	writeSkill(t, filepath.Join(dir, "approve"), files)
	files = goodSkill("effect")
	files["skill.yaml"] = strings.Replace(files["skill.yaml"], "[none]", "[side_effect]", 1)
	writeSkill(t, filepath.Join(dir, "effect"), files)
	writeSkill(t, filepath.Join(dir, ".hidden"), map[string]string{"junk": "x"})
	writeSkill(t, dir, map[string]string{"README.md": "not a skill"})

	reg, err := skills.LoadDir(context.Background(), dir, skills.LoadOptions{Checker: testExecutor(t).Checker(), AllowExternalCalls: true})
	require.NoError(t, err)
	require.Empty(t, reg.Problems())
	ext, _ := reg.Get("ext")
	require.Equal(t, []wasmpy.Capability{wasmpy.AskLLM, wasmpy.Embed, wasmpy.ListFiles, wasmpy.ReadFile, wasmpy.SearchFiles, wasmpy.SubmitResult, wasmpy.WriteFile}, ext.Grants())
	require.False(t, ext.NeedsApproval())
	a, _ := reg.Get("approve")
	require.True(t, a.NeedsApproval())
	e, _ := reg.Get("effect")
	require.True(t, e.NeedsApproval())
}

func TestLoadErrors(t *testing.T) {
	_, err := skills.LoadDir(context.Background(), filepath.Join(t.TempDir(), "nope"), skills.LoadOptions{Checker: testExecutor(t).Checker()})
	require.ErrorContains(t, err, "no such file")
	_, err = skills.LoadDir(context.Background(), "examples", skills.LoadOptions{})
	require.ErrorContains(t, err, "Checker is required")
}

// A handler that crashes the parser itself is one broken skill; the others
// still load.
func TestLoadHostileHandler(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, filepath.Join(dir, "good"), goodSkill("good"))
	files := goodSkill("hostile")
	files["handler.py"] = "x = " + strings.Repeat("(", 100000) + strings.Repeat(")", 100000) + "\ndef run(x):\n    pass\n"
	writeSkill(t, filepath.Join(dir, "hostile"), files)
	reg, err := skills.LoadDir(context.Background(), dir, skills.LoadOptions{Checker: testExecutor(t).Checker()})
	require.NoError(t, err)
	_, ok := reg.Get("good")
	require.True(t, ok)
	require.Len(t, reg.Problems(), 1)
	require.Equal(t, filepath.Join(dir, "hostile", "handler.py"), reg.Problems()[0].Path)
	t.Log(reg.Problems()[0].Reason)
}

// Issue 11: one broken skill kept the others (and the service) waiting for
// minutes. Each costs bounded time now, and a good skill is served while a
// slow one is still being checked.
func TestLoadIsBoundedPerSkill(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, filepath.Join(dir, "good"), goodSkill("good"))
	deep := goodSkill("deep") // 39 KB: compiled for more than 15 s
	deep["schema.json"] = `{"input": {"type": "object", "additionalProperties": false, "properties": {"x": ` +
		strings.Repeat(`{"items": `, 4000) + "{}" + strings.Repeat("}", 4000) + `}, "required": ["x"]}, "output": {}}`
	writeSkill(t, filepath.Join(dir, "deep"), deep)
	dupKeys := goodSkill("dupkeys") // 64 KB: yaml.v3 took minutes
	dupKeys["skill.yaml"] += strings.Repeat("k: v\n", 13000)
	writeSkill(t, filepath.Join(dir, "dupkeys"), dupKeys)
	aliases := goodSkill("aliases")
	aliases["skill.yaml"] += "x: &a [t,t,t,t,t,t,t,t,t]\ny: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nz: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
	writeSkill(t, filepath.Join(dir, "aliases"), aliases)
	slow := goodSkill("slow") // parses for seconds (4-5 s here; a fast machine still needs well over 0.5 s)
	slow["handler.py"] = goodHandler + strings.Repeat("x = [1, 2, 3]\n", 70000)
	writeSkill(t, filepath.Join(dir, "slow"), slow)

	// The bound must sit between the good skill's check and the slow one's
	// on any machine, loaded or not: it is set from the good one's time
	// alone, which is far below the slow one's (about 1:20 here).
	probe := t.TempDir()
	writeSkill(t, filepath.Join(probe, "good"), goodSkill("good"))
	start := time.Now()
	alone, err := skills.StartDir(context.Background(), probe, skills.LoadOptions{Checker: testExecutor(t).Checker()})
	require.NoError(t, err)
	require.NoError(t, alone.Wait(context.Background()))
	bound := max(500*time.Millisecond, 4*time.Since(start)).Round(time.Millisecond)
	t.Logf("the good skill alone: %v; bound per skill: %v", time.Since(start), bound)

	start = time.Now()
	reg, err := skills.StartDir(context.Background(), dir, skills.LoadOptions{Checker: testExecutor(t).Checker(), SkillTimeout: bound})
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, ok := reg.Get("good"); return ok }, bound, time.Millisecond,
		"the good skill is served without waiting for the others")
	require.True(t, reg.Loading("slow"), "the slow one is still being checked")
	// deep may still be pending too: its schema's depth check runs on the
	// other worker and, under -race on a loaded machine, can outlast the
	// good skill's whole check. What must hold is that good is not waiting
	// on slow.
	pending := reg.Pending()
	require.Contains(t, pending, "slow")
	require.NotContains(t, pending, "good")
	require.False(t, reg.Loaded())

	require.NoError(t, reg.Wait(context.Background()))
	require.True(t, reg.Loaded())
	took := time.Since(start)
	t.Logf("loaded in %v", took)
	require.Less(t, took, 20*time.Second)
	require.Empty(t, reg.Pending())
	require.False(t, reg.Loading("slow"))
	require.Len(t, reg.Skills(), 1)
	byPath := map[string]string{}
	for _, p := range reg.Problems() {
		byPath[p.Path] = p.Reason
	}
	require.Len(t, byPath, 4, "%v", reg.Problems())
	require.Contains(t, byPath[filepath.Join(dir, "deep", "schema.json")], "input: nested deeper than 64 levels")
	require.Contains(t, byPath[filepath.Join(dir, "deep", "schema.json")], "the limit for a schema")
	require.Equal(t, `line 7: key "k" given twice`, byPath[filepath.Join(dir, "dupkeys", "skill.yaml")])
	require.Equal(t, "line 7: YAML aliases are not allowed in a manifest", byPath[filepath.Join(dir, "aliases", "skill.yaml")])
	require.Equal(t, "checking the handler took longer than "+bound.String()+" (the limit per skill)", byPath[filepath.Join(dir, "slow", "handler.py")])
}

// Loading stops when its ctx is done, and says so. The ctx is canceled
// as soon as loading has started, so that a fast machine cannot finish the
// checks first.
func TestLoadCanceled(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"slow1", "slow2", "slow3", "slow4"} {
		slow := goodSkill(name)
		slow["handler.py"] = goodHandler + strings.Repeat("x = [1, 2, 3]\n", 70000)
		writeSkill(t, filepath.Join(dir, name), slow)
	}
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	reg, err := skills.StartDir(ctx, dir, skills.LoadOptions{Checker: testExecutor(t).Checker()})
	require.NoError(t, err)
	cancel()
	err = reg.Wait(context.Background())
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, time.Since(start), 5*time.Second)
	require.Empty(t, reg.Pending())
}
