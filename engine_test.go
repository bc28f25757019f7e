package wasmpy_test

import (
	"cmp"
	"context"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
)

// Every result, and the sandbox's interpreter info (provenance), names the
// engine that ran it; an engine the binary lacks fails New clearly.
func TestEngineNamed(t *testing.T) {
	res := run(t, wasmpy.Job{Code: "print(1)"})
	want := cmp.Or(os.Getenv("WASMPY_ENGINE"), "wazero") // the shared sandbox's
	require.Equal(t, want, res.Engine)
	require.Equal(t, "wazero", wasmpy.Engines()[0])

	_, err := wasmpy.New(context.Background(), wasmpy.Config{Engine: "v8"})
	require.ErrorContains(t, err, `unknown engine "v8"`)
	if !slices.Contains(wasmpy.Engines(), "wasmtime") {
		_, err := wasmpy.New(context.Background(), wasmpy.Config{Engine: "wasmtime"})
		require.True(t, errors.Is(err, wasmpy.ErrNoWasmtime), "%v", err)
	}
	for _, name := range wasmpy.Engines() {
		sb, err := wasmpy.New(context.Background(), wasmpy.Config{Engine: name})
		require.NoError(t, err)
		require.Equal(t, name, sb.Interpreter().Engine)
		res, err := sb.Run(context.Background(), wasmpy.Job{Code: "print(6*7)"})
		require.NoError(t, err)
		require.Equal(t, name, res.Engine)
		require.Equal(t, "42\n", res.Stdout)
		require.NoError(t, sb.Close(context.Background()))
	}
}
