package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func pnml(name string) string { return filepath.Join("..", "..", "testdata", "pnml", name) }

func TestNetRunCLI(t *testing.T) {
	code, out, errOut := wasmpyCLI(t, "", "net", "run", pnml("simple_print.yaml"))
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "hello\nmarking: start=0 end=1 (1 step; no transition enabled)\n", out)

	code, out, errOut = wasmpyCLI(t, "", "net", "run", pnml("countdown.yaml"), "--max-steps", "2")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "tick 1\ntick 2\nmarking: ready=1 ticks=2 done=0 (2 steps; stopped at the step limit)\n", out)

	code, out, errOut = wasmpyCLI(t, "", "net", "run", "--json", pnml("countdown.yaml"))
	require.Equal(t, 0, code, errOut)
	dec := json.NewDecoder(strings.NewReader(out))
	var got map[string]any
	require.NoError(t, dec.Decode(&got))
	require.False(t, dec.More(), "exactly one JSON object on stdout")
	require.Equal(t, map[string]any{"ready": 0.0, "ticks": 3.0, "done": 1.0}, got["marking"])
	require.Equal(t, 4.0, got["steps"])
	require.Equal(t, "dead", got["stopped"])
	require.Equal(t, map[string]any{"tick": 3.0, "finish": 1.0}, got["fired"])
	require.Equal(t, map[string]any{"count": 3.0, "limit": 3.0, "result": 6.0}, got["variables"])
	require.Contains(t, got["stdout"], "tick 3\n")
	require.Contains(t, got, "duration_ms", "exec --json's fields are there too")
}

func TestNetRunFails(t *testing.T) {
	bad := writeScript(t, "oops.yaml", "net:\n  id: oops\n  places: [{id: p, tokens: 1}]\n  transitions:\n    - {id: t, inscription: '1/0'}\n  arcs: [{source: p, target: t}]\n")
	code, out, errOut := wasmpyCLI(t, "", "net", "run", bad)
	require.Equal(t, 1, code)
	require.Empty(t, out)
	require.Contains(t, errOut, `File "transitions/t.py", line 4`)
	require.Contains(t, errOut, "ZeroDivisionError")
}

func TestNetBuildCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "art")
	code, out, errOut := wasmpyCLI(t, "", "net", "build", pnml("countdown.yaml"), "--out", dir)
	require.Equal(t, 0, code, errOut)
	want := []string{filepath.Join(dir, "main.py"), filepath.Join(dir, "transitions", "finish.py"), filepath.Join(dir, "transitions", "tick.py")}
	require.Equal(t, strings.Join(want, "\n")+"\n", out)
	for _, f := range want {
		require.FileExists(t, f)
	}
	tick, err := os.ReadFile(want[2])
	require.NoError(t, err)
	require.Contains(t, string(tick), "count += 1\nprint(\"tick\", count)\n")

	// What net build writes runs in the sandbox as it is, reading the
	// transition modules beside main.py.
	code, out, errOut = wasmpyCLI(t, "", "exec", filepath.Join(dir, "main.py"))
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "tick 1\ntick 2\ntick 3\ndone after 3 ticks; marking was {'ready': 0, 'ticks': 3, 'done': 0}\n", out)
	require.Contains(t, errOut, `submit_result: {"net":"countdown","marking":{"ready":0,"ticks":3,"done":1}`)

	// --out may come first; requirements are written, and noted.
	dir = t.TempDir()
	code, _, errOut = wasmpyCLI(t, "", "net", "build", "--out", dir, pnml("needs_pandas.yaml"))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "the net requires pandas>=2.0")
	req, err := os.ReadFile(filepath.Join(dir, "requirements.txt"))
	require.NoError(t, err)
	require.Equal(t, "pandas>=2.0\n", string(req))
}

// Bad nets: one line per problem, FILE:LINE: element: message; status 2.
func TestNetErrorsCLI(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"bad arcs", []string{"net", "run", pnml("bad_arcs.yaml")}, []string{
			`wasmpy: bad_arcs.yaml:6: place "start": duplicate id "start" (already the id of a place at line 5)`,
			`wasmpy: bad_arcs.yaml:11: arc 1 (strat -> go): unknown source "strat"`,
			`wasmpy: bad_arcs.yaml:12: arc 2 (go -> nowhere): unknown target "nowhere"`,
		}},
		{"bad inscription", []string{"net", "build", pnml("bad_inscription.yaml"), "--out", t.TempDir()}, []string{
			`wasmpy: bad_inscription.yaml:8: transition "t": the guard does not parse: invalid syntax (line 1 of the guard)`,
			`wasmpy: bad_inscription.yaml:11: transition "t": the inscription does not parse: invalid syntax (line 2 of the inscription)`,
		}},
		{"requirement refused", []string{"net", "run", pnml("needs_pandas.yaml")}, []string{
			`wasmpy: needs_pandas.yaml:8: transition "fit": requirement "pandas>=2.0": the sandbox mounts no package set, so it has only the standard library`,
			`wasmpy: needs_pandas.yaml:10: transition "fit": the inscription imports pandas`,
		}},
		{"bad YAML", []string{"net", "run", writeScript(t, "y.yaml", "net:\n  id: x\n  places: [\n")}, []string{
			"wasmpy: y.yaml:3: bad YAML: did not find expected node content",
		}},
		{"missing file", []string{"net", "run", "/nonexistent/net.yaml"}, []string{"no such file or directory"}},
		{"no file", []string{"net", "run"}, []string{"net run: want one NET.yaml, got 0 arguments"}},
		{"no --out", []string{"net", "build", pnml("simple_print.yaml")}, []string{"net build: --out DIR is required"}},
		{"bad max steps", []string{"net", "run", pnml("simple_print.yaml"), "--max-steps", "-1"}, []string{"--max-steps must not be negative"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := wasmpyCLI(t, "", tc.args...)
			require.Equal(t, exitUsage, code, errOut)
			require.Empty(t, out)
			for _, w := range tc.want {
				require.Contains(t, errOut, w)
			}
			require.Equal(t, len(tc.want), strings.Count(errOut, "\n"), "one line per problem: %q", errOut)
			require.NotContains(t, errOut, "goroutine")
		})
	}
}
