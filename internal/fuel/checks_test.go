package fuel

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The checked form adds one memory, the stop memory, after the module's
// own (imported and defined), exports it, and adds no global; what it
// writes is a module this package reads again (its encoding is sound).
// That the checks compute as before and stop is checked under wasmtime
// (checks_wasmtime_test.go): wazero has no multi-memory.
func TestInstrumentChecksShape(t *testing.T) {
	for name, memories := range map[string]uint32{"cost.wasm": 0, "ops.wasm": 1, "features.wasm": 1, "env.wasm": 0} {
		in, err := os.ReadFile(filepath.Join("testdata", name))
		require.NoError(t, err)
		out, err := InstrumentChecks(in)
		require.NoError(t, err, name)
		var before, after module
		require.NoError(t, before.splitSections(in))
		require.NoError(t, before.parse())
		require.NoError(t, after.splitSections(out), name)
		require.NoError(t, after.parse(), name)
		require.Equal(t, memories, before.memories, name)
		require.Equal(t, memories+1, after.memories, name)
		require.Equal(t, before.exports+1, after.exports, name)
		require.Equal(t, before.definedGlobals, after.definedGlobals, name)
		require.True(t, bytes.Contains(out, []byte(StopMemoryName)), name)
		require.False(t, bytes.Contains(out, []byte(GlobalName)), name)
		_, err = Instrument(out, nil) // decodes every function body of the checked form
		require.NoError(t, err, name)
	}
}
