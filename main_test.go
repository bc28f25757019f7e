package wasmpy_test

import (
	"os"
	"os/exec"
	"testing"
)

// TestMain gives the tests and benchmarks that run bin/wasmpy a runtime dir
// of their own, so that the resident `wasmpy exec` starts stays theirs,
// and stops it at the end.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wr")
	if err != nil {
		os.Exit(m.Run())
	}
	os.Setenv("XDG_RUNTIME_DIR", dir)
	code := m.Run()
	if _, err := os.Stat("bin/wasmpy"); err == nil {
		exec.Command("bin/wasmpy", "resident", "stop").Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}
