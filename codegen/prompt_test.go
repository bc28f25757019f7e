package codegen

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEmbeddedTemplates(t *testing.T) {
	p, err := parsePrompts("task", TaskTemplate(), "")
	require.NoError(t, err)
	data := promptData{Task: "count words", AllowImports: []string{"math", "re"}, ForbiddenNames: []string{"eval", "open"}, ResultRequired: true}
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
	k1 := cacheKey("task", "m1", "tmpl", "sys", "task A")
	require.Len(t, k1, 64)
	require.NotEqual(t, k1, cacheKey("task", "m2", "tmpl", "sys", "task A"), "the model is part of the key")
	require.NotEqual(t, k1, cacheKey("task", "m1", "tmpl2", "sys", "task A"), "the template is part of the key")
	require.NotEqual(t, k1, cacheKey("task", "m1", "tmpl", "sys", "task B"), "the task is part of the key")
	require.NotEqual(t, k1, cacheKey("function", "m1", "tmpl", "sys", "task A"), "the mode is part of the key")

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

func TestBackoff(t *testing.T) {
	base, ceil := 100*time.Millisecond, 2*time.Second
	for n, full := range []time.Duration{100, 200, 400, 800, 1600, 2000, 2000} {
		full *= time.Millisecond
		for range 50 {
			d := backoff(base, ceil, n)
			require.GreaterOrEqual(t, d, full/2, "retry %d", n)
			require.LessOrEqual(t, d, full, "retry %d", n)
		}
	}
	require.LessOrEqual(t, backoff(base, ceil, 200), ceil, "no overflow")
	seen := map[time.Duration]bool{}
	for range 20 {
		seen[backoff(time.Second, time.Minute, 3)] = true
	}
	require.Greater(t, len(seen), 1, "jitter")
}
