package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/assets"
	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
	"github.com/wasmpy/wasmpy/internal/testing/llmtest"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/skills"
)

// testSkills is the fixture skills directory.
var testSkills = filepath.Join("..", "..", "testdata", "skills")

var (
	interpOnce sync.Once
	interpKind string
	interpErr  error
)

// requireCapabilities fails (never skips) unless the interpreter the CLI
// picks can make host calls: a skill's output travels through submit_result.
func requireCapabilities(t *testing.T) {
	t.Helper()
	interpOnce.Do(func() {
		sb, err := wasmpy.New(context.Background(), wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER")})
		if interpErr = err; err == nil {
			interpKind = sb.Interpreter().Kind
			sb.Close(context.Background())
		}
	})
	require.NoError(t, interpErr)
	if interpKind != assets.Core {
		t.Fatalf("running skills needs the core interpreter build (make interpreter); the interpreter here is %q", interpKind)
	}
}

func TestSkillList(t *testing.T) {
	code, out, errOut := wasmpyCLI(t, "", "skill", "list")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "NAME")
	require.Regexp(t, `(?m)^extract_entities\s+1\.0\.0\s+pii_risk\s+-`, out)
	require.Regexp(t, `(?m)^text_summarize\s+1\.0\.0\s+none`, out)

	code, out, errOut = wasmpyCLI(t, "", "skill", "list", "--json", "--skills", testSkills)
	require.Equal(t, 0, code, errOut)
	var infos []skills.Info
	require.NoError(t, json.Unmarshal([]byte(out), &infos))
	require.Len(t, infos, 5)
	require.Equal(t, "needs_approval", infos[2].Name)
	require.True(t, infos[2].RequiresApproval)
}

func TestSkillShow(t *testing.T) {
	code, out, errOut := wasmpyCLI(t, "", "skill", "show", "text_summarize")
	require.Equal(t, 0, code, errOut)
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	require.Equal(t, "handler.summarize", v["handler"])
	require.Equal(t, "object", v["input_schema"].(map[string]any)["type"])
	require.Contains(t, v["output_schema"].(map[string]any)["required"], "summary")

	code, _, errOut = wasmpyCLI(t, "", "skill", "show", "nope")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, `no skill "nope" (have: compact_memory, extract_entities, text_summarize)`)
}

func TestSkillValidate(t *testing.T) {
	code, out, errOut := wasmpyCLI(t, "", "skill", "validate", testSkills)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "ok      echo 0.1.0")
	require.NotContains(t, out, "broken")

	dir := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(dir, "echo"), os.DirFS(filepath.Join(testSkills, "echo"))))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "bad"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad", "skill.yaml"), []byte("name: bad\nversion: one\n"), 0o644))
	code, out, errOut = wasmpyCLI(t, "", "skill", "validate", dir)
	require.Equal(t, 1, code)
	require.Contains(t, out, "ok      echo 0.1.0")
	require.Contains(t, out, "broken  "+filepath.Join(dir, "bad", "skill.yaml")+`: version "one": not a semantic version`)
	require.Contains(t, out, "broken  "+filepath.Join(dir, "bad", "schema.json")+": missing")
	require.Contains(t, errOut, "problem(s) in "+dir)

	code, out, _ = wasmpyCLI(t, "", "skill", "validate", "--json", dir)
	require.Equal(t, 1, code)
	var v struct {
		Skills   []skills.Info    `json:"skills"`
		Problems []skills.Problem `json:"problems"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	require.Len(t, v.Skills, 1)
	require.NotEmpty(t, v.Problems)
	require.Equal(t, "bad", v.Problems[0].Skill)

	code, _, errOut = wasmpyCLI(t, "", "skill", "validate", filepath.Join(dir, "nope"))
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "no such file or directory")
}

func TestSkillRun(t *testing.T) {
	requireCapabilities(t)
	db := filepath.Join(t.TempDir(), "p.db")
	code, out, errOut := wasmpyCLI(t, "", "skill", "run", "text_summarize", "--record", "--db", db, "--args",
		`{"text": "Cats purr loudly. Cats sleep a lot. Dogs bark. Cats and dogs play together. The sky is blue.", "max_sentences": 2, "style": "detailed"}`)
	require.Equal(t, 0, code, errOut)
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Contains(t, res["summary"], "Cats")
	require.EqualValues(t, 92, res["original_length"])
	require.Regexp(t, `provenance: [0-9a-f-]{36}\n$`, errOut)

	// --json: the HTTP service's shape.
	code, out, errOut = wasmpyCLI(t, "", "skill", "run", "echo", "--skills", testSkills, "--db", db, "--json", "--actor-id", "ci", "--args", `{"message": "x"}`)
	require.Equal(t, 0, code, errOut)
	var full struct {
		Output     map[string]any    `json:"output"`
		Run        map[string]any    `json:"run"`
		Provenance provenance.Record `json:"provenance"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &full))
	require.Equal(t, "ok", full.Provenance.Outcome)
	require.Equal(t, "ci", full.Provenance.ActorID)
	require.Equal(t, "cli", full.Provenance.ActorType)
	require.Equal(t, "x", full.Output["echo"].(map[string]any)["message"])
	require.NotContains(t, full.Run, "output", "the output is shown once, at the top")
	require.Contains(t, full.Run, "stdout")

	// Arguments from a file and from stdin.
	argsFile := writeScript(t, "args.json", `{"message": "from a file"}`)
	code, out, errOut = wasmpyCLI(t, "", "skill", "run", "echo", "--skills", testSkills, "--db", db, "--args", "@"+argsFile)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "from a file")
	code, out, errOut = wasmpyCLI(t, `{"message": "from stdin"}`, "skill", "run", "--skills", testSkills, "--db", db, "echo", "--args", "-")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "from stdin")

	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"schema violation", []string{"echo", "--args", `{"message": 5}`}, exitUsage, "at /message: got number, want string"},
		{"approval missing", []string{"needs_approval", "--args", `{"target": "t"}`}, exitUsage, "needs an explicit approval: pass --approve"},
		{"invalid output", []string{"bad_output"}, 1, "invalid_output: the output of handler.run does not match the schema: at /count"},
		{"not JSON", []string{"not_json"}, 1, "invalid_output"},
		{"unknown skill", []string{"nope"}, exitUsage, `no skill "nope"`},
		{"args not an object", []string{"echo", "--args", `[1]`}, exitUsage, "--args: want a JSON object"},
		{"args missing file", []string{"echo", "--args", "@/nonexistent.json"}, exitUsage, "no such file"},
		{"no name", []string{}, exitUsage, "missing NAME"},
		{"two names", []string{"echo", "spin"}, exitUsage, "want one NAME"},
		{"unknown flag after name", []string{"echo", "--frobnicate"}, exitUsage, "flag provided but not defined: -frobnicate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"skill", "run", "--skills", testSkills, "--db", db}, tc.args...)
			code, out, errOut := wasmpyCLI(t, "", args...)
			require.Equal(t, tc.code, code, "stdout: %s\nstderr: %s", out, errOut)
			require.Contains(t, errOut, tc.msg)
			require.NotContains(t, errOut, "goroutine")
		})
	}

	code, _, errOut = wasmpyCLI(t, "", "skill", "run", "needs_approval", "--approve", "--skills", testSkills, "--db", db, "--args", `{"target": "t"}`)
	require.Equal(t, 0, code, errOut)
	require.NotContains(t, errOut, "provenance: ", "the CLI records only with --record")
}

// Issue 11's hostile skill inputs: a 39 KB schema that kept `skill
// validate` busy past 15 s, a directory name that is an escape sequence,
// and arguments with a lone surrogate.
func TestSkillHostileInputs(t *testing.T) {
	requireCapabilities(t)
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join(testSkills, "echo"))))
	bad := filepath.Join(t.TempDir(), "skills")
	require.NoError(t, os.CopyFS(filepath.Join(bad, "deep"), os.DirFS(dir)))
	require.NoError(t, os.WriteFile(filepath.Join(bad, "deep", "schema.json"), []byte(`{"input": {"type": "object"}, "output": `+
		strings.Repeat(`{"items": `, 4000)+"{}"+strings.Repeat("}", 4000)+`}`), 0o644))
	require.NoError(t, os.CopyFS(filepath.Join(bad, "evil\x1b]0;PWNED\x07"), os.DirFS(dir)))
	start := time.Now()
	code, out, errOut := wasmpyCLI(t, "", "skill", "validate", bad)
	require.Equal(t, 1, code, errOut)
	require.Less(t, time.Since(start), 10*time.Second)
	require.Contains(t, out, filepath.Join(bad, "deep", "schema.json")+": output: nested deeper than 64 levels")
	require.Equal(t, out+errOut, console.CleanText(out+errOut), "a control character was printed")
	require.Contains(t, out, `evil\x1b]0;PWNED\x07`)

	code, _, errOut = wasmpyCLI(t, "", "skill", "run", "echo", "--skills", testSkills, "--db", filepath.Join(t.TempDir(), "p.db"),
		"--args", `{"message": "\ud800"}`)
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, `unpaired UTF-16 surrogate \ud800`)
	code, _, errOut = wasmpyCLI(t, "", "skill", "run", "echo", "--skills", testSkills, "--db", filepath.Join(t.TempDir(), "p.db"),
		"--args", `{"message": "x"}`, "--actor-id", "agent\nFAKE LINE")
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, `actor_id: only printable characters and spaces, got '\n' at byte 5`)
}

// skill validate on a directory with no skill says so and fails; on a
// skill's own directory it validates that skill.
func TestSkillValidateWhereNoSkill(t *testing.T) {
	code, _, errOut := wasmpyCLI(t, "", "skill", "validate", t.TempDir())
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no skill in ")
	require.Contains(t, errOut, "give a skill's directory (with skill.yaml) or the directory that holds them")

	code, out, errOut := wasmpyCLI(t, "", "skill", "validate", filepath.Join(testSkills, "echo"))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "ok      echo ")
}

// skill run shows what the handler prints, on stderr: stdout is its output.
func TestSkillRunShowsPrints(t *testing.T) {
	requireCapabilities(t)
	dir := t.TempDir()
	skill := filepath.Join(dir, "p")
	require.NoError(t, os.MkdirAll(skill, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(skill, "skill.yaml"), []byte("name: p\nversion: 1.0.0\ndescription: prints\nhandler: handler.run\nsafety_flags: [none]\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(skill, "schema.json"), []byte(`{"input": {"type": "object", "additionalProperties": false}, "output": {}}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(skill, "handler.py"), []byte("def run():\n    print('hello from the handler')\n    return 7\n"), 0o644))
	code, out, errOut := wasmpyCLI(t, "", "skill", "run", "p", "--skills", dir, "--db", filepath.Join(dir, "p.db"))
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "7\n", out)
	require.Contains(t, errOut, "hello from the handler\n")
}

// The four classic skills ship built in: embed_text too, where an LLM
// endpoint is configured (--llm-base-url), since it calls embed.
func TestBuiltInSkillsIncludeEmbedTextWithAnLLM(t *testing.T) {
	requireCapabilities(t)
	srv := llmtest.New(t)
	code, out, errOut := wasmpyCLI(t, "", "skill", "list", "--json")
	require.Equal(t, 0, code, errOut)
	require.NotContains(t, out, "embed_text", "no LLM endpoint: left out, not broken")
	require.Empty(t, errOut)
	code, out, errOut = wasmpyCLI(t, "", "skill", "run", "embed_text", "--llm-base-url", srv.URL(), "--llm-model", "m",
		"--args", `{"text": "hello world", "normalize": false}`)
	require.Equal(t, 0, code, errOut)
	var got struct {
		Embedding []float64 `json:"embedding"`
		Dimension int       `json:"dimension"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Equal(t, llmtest.Embedding("hello world"), got.Embedding)
	require.Equal(t, llmtest.EmbeddingDim, got.Dimension)
	code, out, errOut = wasmpyCLI(t, "", "skill", "list", "--llm-base-url", srv.URL())
	require.Equal(t, 0, code, errOut)
	for _, name := range []string{"text_summarize", "extract_entities", "compact_memory", "embed_text"} {
		require.Contains(t, out, name)
	}
}

// --skills is repeatable: several directories of skills, or skills' own
// directories, load as one; a directory name two of them hold is refused.
func TestSkillsFlagRepeatable(t *testing.T) {
	requireCapabilities(t)
	llmDir := filepath.Join("..", "..", "skills", "llm")
	code, out, errOut := wasmpyCLI(t, "", "skill", "list", "--skills", testSkills, "--skills", filepath.Join("..", "..", "skills", "examples", "text_summarize"),
		"--skills", llmDir, "--llm-base-url", "http://127.0.0.1:9/v1")
	require.Equal(t, 0, code, errOut)
	for _, name := range []string{"echo", "text_summarize", "embed_text"} {
		require.Regexp(t, `(?m)^`+name+`\s`, out)
	}
	require.NotContains(t, out, "compact_memory", "only the one skill's directory")
	code, out, errOut = wasmpyCLI(t, "", "skill", "show", "embed_text", "--skills", testSkills, "--skills", llmDir, "--llm-base-url", "http://127.0.0.1:9/v1")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, filepath.Join(llmDir, "embed_text"), "the path users recognise")

	code, _, errOut = wasmpyCLI(t, "", "skill", "list", "--skills", testSkills, "--skills", testSkills)
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "../../testdata/skills and ../../testdata/skills both hold a directory")
}
