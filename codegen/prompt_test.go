package codegen

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
)

func TestEmbeddedTemplates(t *testing.T) {
	p, err := parsePrompts("task", TaskTemplate(), "")
	require.NoError(t, err)
	data := promptData{Task: "count words", AllowImports: []string{"math", "re"}, ForbiddenNames: []string{"eval", "open"}, ResultRequired: true, Grants: []string{"submit_result"}}
	system, err := p.render("system", data)
	require.NoError(t, err)
	require.Contains(t, system, "Import only these modules: math, re.")
	require.Contains(t, system, "Do not use eval, open")
	require.Contains(t, system, "submit_result(value)")
	require.Contains(t, system, "must call submit_result(...) exactly once")
	data.ResultRequired = false
	system, _ = p.render("system", data)
	require.NotContains(t, system, "must call submit_result")
	user, err := p.render("user", data)
	require.NoError(t, err)
	require.Equal(t, "Task: count words", user)
	data.Attempt, data.Code, data.Problem = 2, "import os\n", "- line 1: import of 'os' is not allowed"
	retry, err := p.render("retry", data)
	require.NoError(t, err)
	require.Contains(t, retry, "Attempt 2 failed.\n- line 1: import of 'os' is not allowed")
	require.Contains(t, retry, "```python\nimport os\n```")

	f, err := parsePrompts("function", FunctionTemplate(), "")
	require.NoError(t, err)
	user, err = f.render("user", promptData{Signature: "def add(a, b):"})
	require.NoError(t, err)
	require.Contains(t, user, "```python\ndef add(a, b):\n```")
}

// An override file redefines some templates; the others stay embedded.
func TestTemplateOverride(t *testing.T) {
	p, err := parsePrompts("task", TaskTemplate(), `{{define "system"}}Be terse. Modules: {{join .AllowImports "+"}}{{end}}`)
	require.NoError(t, err)
	system, err := p.render("system", promptData{AllowImports: []string{"a", "b"}})
	require.NoError(t, err)
	require.Equal(t, "Be terse. Modules: a+b", system)
	user, err := p.render("user", promptData{Task: "x"})
	require.NoError(t, err)
	require.Equal(t, "Task: x", user)

	for name, override := range map[string]string{
		"defines nothing": "Just some text.",
		"does not parse":  `{{define "system"}}{{.Task}`,
		"unknown field":   `{{define "user"}}{{.Nope}}{{end}}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parsePrompts("task", TaskTemplate(), override)
			require.ErrorContains(t, err, "codegen: task template")
		})
	}
}

func TestCache(t *testing.T) {
	dir := t.TempDir()
	c := &codeCache{dir: filepath.Join(dir, "sub")}
	k1 := cacheKey("task", "http://a/v1", "m1", "tmpl", "sys", "task A")
	require.Len(t, k1, 64)
	require.NotEqual(t, k1, cacheKey("task", "http://b/v1", "m1", "tmpl", "sys", "task A"), "the server is part of the key")
	require.NotEqual(t, k1, cacheKey("task", "http://a/v1", "m2", "tmpl", "sys", "task A"), "the model is part of the key")
	require.NotEqual(t, k1, cacheKey("task", "http://a/v1", "m1", "tmpl2", "sys", "task A"), "the template is part of the key")
	require.NotEqual(t, k1, cacheKey("task", "http://a/v1", "m1", "tmpl", "sys", "task B"), "the task is part of the key")
	require.NotEqual(t, k1, cacheKey("function", "http://a/v1", "m1", "tmpl", "sys", "task A"), "the mode is part of the key")

	_, ok := c.get(k1)
	require.False(t, ok)
	require.NoError(t, c.put(k1, cacheEntry{Kind: "task", Model: "m1", Code: "print(1)\n", Verified: "ran"}))
	e, ok := c.get(k1)
	require.True(t, ok)
	require.Equal(t, "print(1)\n", e.Code)
	require.WithinDuration(t, time.Now(), e.Created, time.Minute)
	entries, _ := os.ReadDir(c.dir)
	require.Len(t, entries, 1, "no temporary files left behind")

	// A corrupt or foreign entry is a miss, never an error.
	require.NoError(t, os.WriteFile(c.path(k1), []byte("{not json"), 0o600))
	_, ok = c.get(k1)
	require.False(t, ok)
	require.NoError(t, os.WriteFile(c.path(k1), []byte(`{"version": 99, "code": "x"}`), 0o600))
	_, ok = c.get(k1)
	require.False(t, ok)
	c.remove(k1)
	_, err := os.Stat(c.path(k1))
	require.True(t, os.IsNotExist(err))

	var none *codeCache // the disabled cache
	_, ok = none.get(k1)
	require.False(t, ok)
	require.NoError(t, none.put(k1, cacheEntry{Code: "x"}))
}

// The task prompt promises the model builtins: each promise is checked
// against the real sandbox, so the prompt cannot drift from what runs.
func TestTaskPromptMatchesSandbox(t *testing.T) {
	p, err := parsePrompts("task", taskTemplate, "")
	require.NoError(t, err)
	var all []string
	for _, c := range wasmpy.Builtins() {
		all = append(all, string(c))
	}
	system, err := p.render("system", promptData{AllowImports: []string{"math"}, ForbiddenNames: []string{"eval"}, ResultRequired: true, Grants: all})
	require.NoError(t, err)
	line := regexp.MustCompile(`(?m)^\s+(\w+)(\(.*?\)) -> (.+?)\s+#`)
	var promised []map[string]string
	for _, m := range line.FindAllStringSubmatch(system, -1) {
		promised = append(promised, map[string]string{"name": m[1], "params": m[2], "returns": m[3]})
	}
	require.Len(t, promised, len(wasmpy.Builtins()), "one line per built-in capability:\n%s", system)
	require.Contains(t, system, "* stays in one directory, ** spans them")
	require.Contains(t, system, "LLMError or BudgetExceeded")

	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("hello\n"), 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "sub"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "sub", "deep.txt"), []byte("deep\n"), 0o600))
	spec, _ := json.Marshal(promised)
	res, err := testSandbox(t).Run(context.Background(), wasmpy.Job{Workspace: ws, Grants: wasmpy.Builtins(), Code: `
import builtins, inspect, json, typing
promised = json.loads(` + "r'''" + string(spec) + "'''" + `)

def conforms(value, annotation):
    t = eval(annotation, {})
    if t is None:
        return value is None
    origin = typing.get_origin(t)
    if origin is list:
        (item,) = typing.get_args(t)
        return isinstance(value, list) and all(isinstance(v, item) for v in value)
    if origin is not None:  # a union
        return isinstance(value, typing.get_args(t))
    return isinstance(value, t)

calls = {
    "read_file": lambda: read_file("notes.txt"),
    "write_file": lambda: write_file("out.txt", "four"),
    "list_files": lambda: list_files(),
    "search_files": lambda: search_files("hel"),
    "submit_result": lambda: submit_result(1),
}
problems = []
for p in promised:
    fn = getattr(builtins, p["name"])
    actual = str(inspect.signature(fn))
    if actual != p["params"]:
        problems.append("%s: the prompt says %s, the sandbox has %s" % (p["name"], p["params"], actual))
    if p["name"] in calls:
        value = calls[p["name"]]()
        if not conforms(value, p["returns"]):
            problems.append("%s returned %r, the prompt says -> %s" % (p["name"], value, p["returns"]))
assert write_file("size.txt", "12345") == 5
assert list_files() == ["notes.txt", "out.txt", "size.txt"], list_files()
assert "sub/deep.txt" in list_files("**"), list_files("**")
assert issubclass(LLMError, Exception) and issubclass(BudgetExceeded, Exception)
print("\n".join(problems))
`})
	require.NoError(t, err)
	require.Nil(t, res.Error, "%+v\n%s", res.Error, res.Stderr)
	require.Empty(t, strings.TrimSpace(res.Stdout))
}
