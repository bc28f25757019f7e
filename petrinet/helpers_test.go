package petrinet

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
)

// The tests run against the best installed interpreter (WASMPY_INTERPRETER
// overrides it), as the root package's do; one sandbox serves them all.
var (
	sandboxOnce sync.Once
	sandbox     *wasmpy.Sandbox
	sandboxErr  error
)

func testSandbox(t testing.TB) *wasmpy.Sandbox {
	t.Helper()
	sandboxOnce.Do(func() {
		sandbox, sandboxErr = wasmpy.New(context.Background(), wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER")})
	})
	require.NoError(t, sandboxErr, "run `make` first to install the interpreter")
	return sandbox
}
