package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
)

// An engine the binary cannot run is a usage error: one line, exit 2,
// before anything loads; the one it runs is named in --json and --version.
func TestEngineFlag(t *testing.T) {
	bad := []string{"nope"}
	if !slices.Contains(wasmpy.Engines(), "wasmtime") {
		bad = append(bad, "wasmtime")
	}
	for _, name := range bad {
		for _, cmd := range [][]string{{"exec", "--resident=false", "--engine", name, "-c", "print(1)"},
			{"serve", "--engine", name, "--addr", "127.0.0.1:0"}, {"mcp", "--engine", name}} {
			code, stdout, stderr := wasmpyCLI(t, "", cmd...)
			require.Equal(t, 2, code, "%v: %s", cmd, stderr)
			require.Empty(t, stdout)
			require.Equal(t, 1, strings.Count(stderr, "\n"), stderr)
			require.Contains(t, stderr, "--engine")
			if name == "wasmtime" {
				require.Contains(t, stderr, "-tags wasmtime")
			}
		}
		t.Setenv("WASMPY_ENGINE", name)
		code, _, stderr := wasmpyCLI(t, "", "exec", "--resident=false", "-c", "print(1)")
		require.Equal(t, 2, code, stderr)
		t.Setenv("WASMPY_ENGINE", "")
	}
	for _, name := range wasmpy.Engines() {
		code, stdout, stderr := wasmpyCLI(t, "", "exec", "--resident=false", "--json", "--engine", name, "-c", "print(1)")
		require.Equal(t, 0, code, stderr)
		require.Contains(t, stdout, `"engine": "`+name+`"`)
	}
	// Without --engine the CLI runs wasmtime where the binary has it.
	want := "wazero"
	if slices.Contains(wasmpy.Engines(), "wasmtime") {
		want = "wasmtime"
	}
	t.Setenv("WASMPY_ENGINE", "")
	code, stdout, stderr := wasmpyCLI(t, "", "exec", "--resident=false", "--json", "-c", "print(1)")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, `"engine": "`+want+`"`)
	code, stdout, _ = wasmpyCLI(t, "", "--version")
	require.Equal(t, 0, code)
	require.Contains(t, stdout, "engines: wazero v")
	require.Regexp(t, want+` v[^,\n]* \(default\)`, stdout)
}
