package petrinet

import (
	"testing"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/internal/testing/sandboxtest"
)

// The tests run against the best installed interpreter (WASMPY_INTERPRETER
// overrides it), as the root package's do; one sandbox serves them all.
func testSandbox(t testing.TB) *wasmpy.Sandbox { return sandboxtest.Shared(t) }
