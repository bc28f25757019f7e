// Package sandboxtest gives a package's tests one sandbox on the real
// interpreter, shared by all of them as a real program would share it.
package sandboxtest

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
)

var (
	once sync.Once
	sb   *wasmpy.Sandbox
	err  error
)

// Shared is the test binary's sandbox on the interpreter `make` installed
// ($WASMPY_INTERPRETER overrides it), under the engine $WASMPY_ENGINE names
// (wazero by default: `make test` runs the suite again on wasmtime),
// opened on first use.
func Shared(t testing.TB) *wasmpy.Sandbox {
	t.Helper()
	once.Do(func() {
		sb, err = wasmpy.New(context.Background(), wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER"), Engine: os.Getenv("WASMPY_ENGINE")})
	})
	require.NoError(t, err, "run `make` first to install the interpreter")
	return sb
}
