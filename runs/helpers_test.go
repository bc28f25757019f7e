package runs_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/runs"
)

var (
	execOnce sync.Once
	executor *runs.Executor
	execErr  error
)

// testExecutor is one Executor for the package's tests, on the interpreter
// $WASMPY_INTERPRETER names (default: the best installed).
func testExecutor(t testing.TB) *runs.Executor {
	t.Helper()
	execOnce.Do(func() {
		executor, execErr = runs.NewExecutor(context.Background(), runs.ExecutorConfig{
			Sandbox: wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER")}})
	})
	require.NoError(t, execErr)
	return executor
}

func writeSkill(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

const (
	goodYAML   = "name: NAME\nversion: 1.0.0\ndescription: a test skill\nhandler: handler.run\nsafety_flags: [none]\n"
	goodSchema = `{"input": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"], "additionalProperties": false},
	               "output": {"type": "object"}}`
	goodHandler = "def run(x):\n    return {\"x\": x}\n"
)

// goodSkill is the files of a skill that loads, named name.
func goodSkill(name string) map[string]string {
	return map[string]string{
		"skill.yaml":  strings.Replace(goodYAML, "NAME", name, 1),
		"schema.json": goodSchema,
		"handler.py":  goodHandler,
	}
}
