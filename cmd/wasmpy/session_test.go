package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExecSession(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.session")
	code, out, errOut := wasmpyCLI(t, "", "exec", "--session", path, "-c", "import json\nx = 1\nwrite_file('kept.txt', 'yes')")
	require.Equal(t, 0, code, errOut)
	require.Empty(t, out)
	require.FileExists(t, path)

	code, _, errOut = wasmpyCLI(t, "", "exec", "--session", path, "-c", "x += 1")
	require.Equal(t, 0, code, errOut)
	// A turn stopped by a limit leaves the saved state as it was.
	code, _, errOut = wasmpyCLI(t, "", "exec", "--session", path, "--timeout", "200ms", "-c", "x = 100\nwhile True: pass")
	require.Equal(t, 124, code, errOut)
	code, out, errOut = wasmpyCLI(t, "print(x, json.dumps(x), read_file('kept.txt'))\n", "exec", "--session", path, "--json", "-")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"stdout": "2 2 yes\n"`)
	require.Contains(t, out, `"turn": 4`)

	// The REPL (-i) runs in the session too, and what it defines is saved.
	code, _, errOut = wasmpyCLI(t, "y = x * 10\n", "exec", "--session", path, "-i", "-c", "x += 1")
	require.Equal(t, 0, code, errOut)
	code, out, errOut = wasmpyCLI(t, "", "exec", "--session", path, "-c", "print(x, y)")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "3 30\n", out)

	// A plain run sees none of it.
	code, out, _ = wasmpyCLI(t, "", "exec", "-c", "print(globals().get('x'))")
	require.Equal(t, 0, code)
	require.Equal(t, "None\n", out)
}

func TestExecSessionBadFile(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	require.NoError(t, os.WriteFile(garbage, []byte("not a session at all"), 0o600))
	for _, c := range []struct{ path, want string }{
		{garbage, "not a wasmpy saved session"},
		{dir, "is a directory"},
		{"", "--session: give a FILE"},
	} {
		code, out, errOut := wasmpyCLI(t, "", "exec", "--session", c.path, "-c", "print('ran')")
		require.Equal(t, exitUsage, code, errOut)
		require.Empty(t, out, "nothing runs")
		require.Contains(t, errOut, c.want)
		require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
		require.Equal(t, 1, strings.Count(errOut, "wasmpy:"), errOut)
	}
	b, err := os.ReadFile(garbage)
	require.NoError(t, err)
	require.Equal(t, "not a session at all", string(b), "a file that is not a session is left alone")
}
