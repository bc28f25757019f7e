// Package skilltest gives the tests of the registry (skills) and of the run
// service (runs) one Executor on the real interpreter and the files of a
// skill that loads.
package skilltest

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
	once     sync.Once
	executor *runs.Executor
	execErr  error
)

// Executor is one Executor for the test binary, on the interpreter
// $WASMPY_INTERPRETER names (default: the best installed) under the engine
// $WASMPY_ENGINE names, opened on first use.
func Executor(t testing.TB) *runs.Executor {
	t.Helper()
	once.Do(func() {
		executor, execErr = runs.NewExecutor(context.Background(), runs.ExecutorConfig{
			Sandbox: wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER"), Engine: os.Getenv("WASMPY_ENGINE")}})
	})
	require.NoError(t, execErr, "run `make` first to install the interpreter")
	return executor
}

// Write writes files (name relative to dir: content) into dir.
func Write(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// The parts of a skill that loads: its manifest (NAME stands for its name),
// its schema and its handler.
const (
	GoodYAML   = "name: NAME\nversion: 1.0.0\ndescription: a test skill\nhandler: handler.run\nsafety_flags: [none]\n"
	GoodSchema = `{"input": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"], "additionalProperties": false},
	               "output": {"type": "object"}}`
	GoodHandler = "def run(x):\n    return {\"x\": x}\n"
)

// Good is the files of a skill that loads, named name.
func Good(name string) map[string]string {
	return map[string]string{
		"skill.yaml":  strings.Replace(GoodYAML, "NAME", name, 1),
		"schema.json": GoodSchema,
		"handler.py":  GoodHandler,
	}
}
