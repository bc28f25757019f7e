package petrinet

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/codegen"
)

func readNet(t *testing.T, name string) *Net {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "pnml", name))
	require.NoError(t, err)
	n, err := Parse(data)
	require.NoError(t, err)
	return n
}

func TestParseNet(t *testing.T) {
	n := readNet(t, "simple_print.yaml")
	require.Equal(t, "greeter", n.ID)
	require.Equal(t, []Place{{ID: "start", Tokens: 1, Line: 5}, {ID: "end", Line: 6}}, n.Places)
	require.Len(t, n.Transitions, 1)
	tr := n.Transitions[0]
	require.Equal(t, "say", tr.ID)
	require.Equal(t, `print("hello")`, tr.Inscription)
	require.Equal(t, "True", tr.Guard)
	require.Empty(t, tr.Requires)
	require.Equal(t, 8, tr.Line)
	require.Equal(t, []Arc{{Source: "start", Target: "say", Line: 13}, {Source: "say", Target: "end", Line: 14}}, n.Arcs)

	n = readNet(t, "countdown.yaml")
	require.Equal(t, map[string]any{"count": 0, "limit": 3}, n.Variables)
	require.Equal(t, "count += 1\nprint(\"tick\", count)\n", n.Transitions[0].Inscription)
	require.Equal(t, 18, n.Transitions[0].inscriptionLine, "a block scalar starts on the next line")

	// A YAML boolean guard is Python's.
	n, err := Parse([]byte("net:\n  id: b\n  transitions:\n    - {id: t, guard: false}\n"))
	require.NoError(t, err)
	require.Equal(t, "False", n.Transitions[0].Guard)
	// One requirement may be a plain string.
	n, err = Parse([]byte("net:\n  id: r\n  transitions:\n    - {id: t, requires: json}\n"))
	require.NoError(t, err)
	require.Equal(t, []string{"json"}, n.Transitions[0].Requires)
}

// Every bad net is an error naming the element and the line.
func TestParseNetErrors(t *testing.T) {
	const head = "net:\n  id: n\n" // lines 1-2
	for _, tc := range []struct {
		name, yaml string
		line       int
		element    string
		msg        string
	}{
		{"bad YAML", head + "  places: [\n", 3, "", "bad YAML: did not find expected node content"},
		{"tab indentation", head + "  places:\n\t- {id: p}\n", 4, "", "bad YAML"},
		{"empty file", "", 1, "", "empty file"},
		{"no net key", "nets:\n  id: x\n", 1, "the document", `unknown key "nets"`},
		{"net is a list", "net:\n  - a\n", 2, "net", "want a mapping"},
		{"unknown key", head + "  places:\n    - {id: p, tokns: 1}\n", 4, "place 1", `unknown key "tokns" (want one of: id, name, tokens)`},
		{"repeated key", head + "  places:\n    - id: p\n      id: q\n", 5, "place 1", "the key id appears twice"},
		{"negative tokens", head + "  places:\n    - {id: p, tokens: -1}\n", 4, `place "p"`, "tokens: want a whole number from 0"},
		{"tokens not a number", head + "  places:\n    - {id: p, tokens: many}\n", 4, `place "p"`, `got "many"`},
		{"places not a list", head + "  places: {id: p}\n", 3, "net", "places: want a list"},
		{"missing id", head + "  places:\n    - {tokens: 1}\n", 4, "place 1", "missing id"},
		{"bad id", head + "  places:\n    - {id: 'a b'}\n", 4, `place "a b"`, "id \"a b\": want a letter"},
		{"bad net id", "net:\n  id: ../x\n", 2, "net", `id "../x"`},
		{"duplicate place", head + "  places:\n    - {id: p}\n    - {id: p}\n", 5, `place "p"`, `duplicate id "p" (already the id of a place at line 4)`},
		{"place and transition share an id", head + "  places:\n    - {id: x}\n  transitions:\n    - {id: x}\n", 6, `transition "x"`, "already the id of a place at line 4"},
		{"unknown source", head + "  places:\n    - {id: start}\n  transitions:\n    - {id: t}\n  arcs:\n    - {source: strat, target: t}\n",
			8, "arc 1 (strat -> t)", `unknown source "strat": no place or transition has this id (places: start; transitions: t)`},
		{"unknown target", head + "  transitions:\n    - {id: t}\n  arcs:\n    - {source: t, target: nowhere}\n", 6, "arc 1 (t -> nowhere)", `unknown target "nowhere"`},
		{"place to place", head + "  places:\n    - {id: a}\n    - {id: b}\n  arcs:\n    - {source: a, target: b}\n", 7, "arc 1 (a -> b)", "joins two places"},
		{"duplicate arc", head + "  places:\n    - {id: a}\n  transitions:\n    - {id: t}\n  arcs:\n    - {source: a, target: t}\n    - {source: a, target: t}\n",
			9, "arc 2 (a -> t)", "the same arc again (first at line 8)"},
		{"zero weight", head + "  places:\n    - {id: a}\n  transitions:\n    - {id: t}\n  arcs:\n    - {source: a, target: t, weight: 0}\n", 8, "arc 1 (a -> t)", "weight: want a whole number from 1"},
		{"arc without target", head + "  transitions:\n    - {id: t}\n  arcs:\n    - {source: t}\n", 6, "arc 1 (t -> )", "needs a source and a target"},
		{"bad requirement", head + "  transitions:\n    - id: t\n      requires: ['numpy; rm -rf /']\n", 5, `transition "t"`, "not a package name"},
		{"inscription is a list", head + "  transitions:\n    - id: t\n      inscription: [a]\n", 5, `transition "t"`, "inscription: want a string"},
		{"bad variable", head + "  variables:\n    2x: 1\n", 4, "variables", `"2x" is not a Python identifier`},
		{"bad max_steps", head + "  max_steps: 0\n", 3, "net", "max_steps: want a whole number from 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			var ne *Error
			require.ErrorAs(t, err, &ne)
			require.True(t, strings.HasPrefix(err.Error(), "petrinet: "), err.Error())
			p := ne.Problems[0]
			require.Equal(t, tc.line, p.Line, "%+v", ne.Problems)
			require.Equal(t, tc.element, p.Element, "%+v", ne.Problems)
			require.Contains(t, p.Message, tc.msg)
		})
	}
}

// All the problems of a file at once, in line order.
func TestParseNetAllProblems(t *testing.T) {
	data, err := os.ReadFile("../testdata/pnml/bad_arcs.yaml")
	require.NoError(t, err)
	_, err = Parse(data)
	var ne *Error
	require.ErrorAs(t, err, &ne)
	var got []string
	for _, p := range ne.Problems {
		got = append(got, p.String())
	}
	require.Equal(t, []string{
		`line 6: place "start": duplicate id "start" (already the id of a place at line 5)`,
		`line 11: arc 1 (strat -> go): unknown source "strat": no place or transition has this id (places: start; transitions: go)`,
		`line 12: arc 2 (go -> nowhere): unknown target "nowhere": no place or transition has this id (places: start; transitions: go)`,
	}, got)
	require.Contains(t, err.Error(), "petrinet: 3 problems: line 6:")
}

func FuzzParseNet(f *testing.F) {
	for _, name := range []string{"simple_print.yaml", "countdown.yaml", "producer_consumer.yaml", "bad_arcs.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", "testdata", "pnml", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := Parse(data)
		if err != nil {
			var ne *Error
			if !errors.As(err, &ne) || len(ne.Problems) == 0 {
				t.Fatalf("not a Error with problems: %v", err)
			}
			return
		}
		if _, err := n.Build(); err != nil {
			t.Fatalf("a parsed net does not build: %v", err)
		}
	})
}

func TestNetBuild(t *testing.T) {
	art, err := readNet(t, "simple_print.yaml").Build()
	require.NoError(t, err)
	require.Equal(t, "greeter", art.Net)
	require.Equal(t, "main.py", art.Entrypoint)
	var paths []string
	for _, f := range art.Files {
		paths = append(paths, f.Path)
	}
	require.Equal(t, []string{"main.py", "transitions/say.py"}, paths)
	say := string(art.Files[1].Data)
	require.True(t, strings.HasSuffix(say, "\nprint(\"hello\")\n"), say)
	require.Contains(t, say, "# Consumes: start×1. Produces: end×1.")
	require.NotContains(t, string(art.Files[0].Data), "# Transition say", "main.py reads the modules beside it")
	data, err := fs.ReadFile(art.FS(), "transitions/say.py")
	require.NoError(t, err)
	require.Equal(t, say, string(data))
	require.Empty(t, art.Requirements)

	art, err = readNet(t, "needs_pandas.yaml").Build()
	require.NoError(t, err, "build does not judge requirements: the artifact may run elsewhere")
	require.Equal(t, []string{"pandas>=2.0"}, art.Requirements)
	require.Equal(t, "requirements.txt", art.Files[1].Path)
	require.Equal(t, "pandas>=2.0\n", string(art.Files[1].Data))

	// A net built in Go is checked as one from YAML.
	_, err = (&Net{ID: "g", Places: []Place{{ID: "p"}}, Arcs: []Arc{{Source: "p", Target: "q"}}}).Build()
	require.ErrorContains(t, err, `unknown target "q"`)
}

// The written files run with a stock Python too.
func TestNetArtifactFiles(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed: the file form of an artifact is run with the host's Python")
	}
	dir := t.TempDir()
	art, err := readNet(t, "countdown.yaml").Build()
	require.NoError(t, err)
	require.NoError(t, art.WriteDir(dir))
	out, err := exec.Command(python, filepath.Join(dir, "main.py")).Output()
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Equal(t, "tick 1", lines[0])
	var report Outcome
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &report))
	require.Equal(t, map[string]int{"ready": 0, "ticks": 3, "done": 1}, report.Marking)
}

func TestNetCheck(t *testing.T) {
	sb := testSandbox(t)
	require.NoError(t, readNet(t, "countdown.yaml").Check(context.Background(), sb))
	require.NoError(t, readNet(t, "needs_pandas.yaml").Check(context.Background(), sb), "Check judges syntax only")

	n := readNet(t, "bad_inscription.yaml")
	err := n.Check(context.Background(), sb)
	var ne *Error
	require.ErrorAs(t, err, &ne)
	require.Len(t, ne.Problems, 2)
	require.Equal(t, Problem{Line: 8, Element: `transition "t"`, Message: "the guard does not parse: invalid syntax (line 1 of the guard)"}, ne.Problems[0])
	require.Equal(t, 11, ne.Problems[1].Line)
	require.Contains(t, ne.Problems[1].Message, "the inscription does not parse")
	require.Contains(t, ne.Problems[1].Message, "(line 2 of the inscription)")
}

func TestNetRun(t *testing.T) {
	sb := testSandbox(t)
	ctx := context.Background()
	for _, tc := range []struct {
		file      string
		opts      RunOptions
		stdout    string
		marking   map[string]int
		steps     int
		stopped   string
		fired     map[string]int
		variables string
	}{
		{"simple_print.yaml", RunOptions{}, "hello\n", map[string]int{"start": 0, "end": 1}, 1, "dead", map[string]int{"say": 1}, `{}`},
		{"countdown.yaml", RunOptions{},
			"tick 1\ntick 2\ntick 3\ndone after 3 ticks; marking was {'ready': 0, 'ticks': 3, 'done': 0}\n",
			map[string]int{"ready": 0, "ticks": 3, "done": 1}, 4, "dead", map[string]int{"tick": 3, "finish": 1},
			`{"count": 3, "limit": 3, "result": 6}`},
		{"countdown.yaml", RunOptions{MaxSteps: 2}, "tick 1\ntick 2\n",
			map[string]int{"ready": 1, "ticks": 2, "done": 0}, 2, "step_limit", map[string]int{"tick": 2, "finish": 0},
			`{"count": 2, "limit": 3}`},
		{"producer_consumer.yaml", RunOptions{}, "",
			map[string]int{"buffer": 0, "power": 1}, 5, "dead", map[string]int{"produce": 3, "consume": 2},
			`{"made": 6, "eaten": [1, 0]}`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			run, err := readNet(t, tc.file).Run(ctx, sb, tc.opts)
			require.NoError(t, err)
			require.Nil(t, run.Result.Error, "%+v", run.Result.Error)
			require.Equal(t, tc.stdout, run.Result.Stdout)
			require.Equal(t, tc.marking, run.Marking)
			require.Equal(t, tc.steps, run.Steps)
			require.Equal(t, tc.stopped, run.Stopped)
			require.Equal(t, tc.fired, run.Fired)
			require.JSONEq(t, tc.variables, string(run.Variables))
		})
	}
}

func TestNetRunStepLimit(t *testing.T) {
	// A transition without inputs is always enabled: only the limit stops it.
	n, err := Parse([]byte("net:\n  id: forever\n  max_steps: 50\n  places: [{id: out}]\n  transitions: [{id: spin}]\n  arcs: [{source: spin, target: out}]\n"))
	require.NoError(t, err)
	run, err := n.Run(context.Background(), testSandbox(t), RunOptions{})
	require.NoError(t, err)
	require.Equal(t, "step_limit", run.Stopped)
	require.Equal(t, 50, run.Steps)
	require.Equal(t, map[string]int{"out": 50}, run.Marking)
}

func TestNetRunRefusesRequirements(t *testing.T) {
	_, err := readNet(t, "needs_pandas.yaml").Run(context.Background(), testSandbox(t), RunOptions{})
	var ne *Error
	require.ErrorAs(t, err, &ne)
	require.Len(t, ne.Problems, 2)
	require.Equal(t, 8, ne.Problems[0].Line)
	require.Equal(t, `transition "fit"`, ne.Problems[0].Element)
	require.Equal(t, `requirement "pandas>=2.0": the sandbox mounts no package set, so it has only the standard library`, ne.Problems[0].Message)
	require.Equal(t, 10, ne.Problems[1].Line)
	require.Contains(t, ne.Problems[1].Message, "the inscription imports pandas, which the sandbox does not provide")

	// Standard-library requirements are fine.
	n, err := Parse([]byte("net:\n  id: ok\n  transitions:\n    - {id: t, requires: [json, 'collections'], inscription: 'import json'}\n  max_steps: 1\n"))
	require.NoError(t, err)
	run, err := n.Run(context.Background(), testSandbox(t), RunOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, run.Steps)
}

func TestNetRunInscriptionFails(t *testing.T) {
	n, err := Parse([]byte("net:\n  id: oops\n  places: [{id: p, tokens: 1}]\n  transitions:\n    - id: t\n      inscription: |\n        x = 1\n        x / 0\n  arcs: [{source: p, target: t}]\n"))
	require.NoError(t, err)
	run, err := n.Run(context.Background(), testSandbox(t), RunOptions{})
	require.NoError(t, err, "a failing inscription is the net's outcome, not an error")
	require.NotNil(t, run.Result.Error)
	require.Equal(t, wasmpy.KindException, run.Result.Error.Kind)
	require.Contains(t, run.Result.Error.Traceback, `File "transitions/t.py", line 5`)
	require.Contains(t, run.Result.Error.Traceback, "ZeroDivisionError")
	require.Nil(t, run.Marking)
}

// Quotes, backslashes and triple quotes in names, variables and
// inscriptions survive the trip into main.py's JSON literals.
func TestNetRunTrickySource(t *testing.T) {
	n, err := Parse([]byte(`net:
  id: tricky
  name: 'ends with a backslash \'
  variables:
    s: 'a """ b \ c'
  places: [{id: p, tokens: 1, name: '"""'}]
  transitions:
    - id: t
      name: "\"\"\"\\"
      inscription: |
        s = s + ' """ and \\ and \n'
        print('\\', """x""", s)
  arcs: [{source: p, target: t}]
`))
	require.NoError(t, err)
	run, err := n.Run(context.Background(), testSandbox(t), RunOptions{})
	require.NoError(t, err)
	require.Nil(t, run.Result.Error, "%+v", run.Result.Error)
	require.Equal(t, "\\ x a \"\"\" b \\ c \"\"\" and \\ and \n\n", run.Result.Stdout)
	require.JSONEq(t, `{"s": "a \"\"\" b \\ c \"\"\" and \\ and \n"}`, string(run.Variables))
}

// A sandbox's import policy binds codegen's runs too: inscriptions run as
// __main__. Codegen's own validator needs HelperImports.
func TestSandboxImportPolicy(t *testing.T) {
	ctx := context.Background()
	strict, err := wasmpy.New(ctx, wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER"), AllowImports: []string{"math"}})
	require.NoError(t, err)
	defer strict.Close(ctx)
	_, err = codegen.Validate(ctx, strict, "x = 1\n", codegen.Rules{})
	require.ErrorContains(t, err, "codegen: the validator failed in the sandbox")
	require.ErrorContains(t, err, "must allow "+strings.Join(codegen.HelperImports(), ", "))

	policy, err := wasmpy.New(ctx, wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER"), AllowImports: append([]string{"importlib"}, codegen.HelperImports()...)})
	require.NoError(t, err)
	defer policy.Close(ctx)
	n, err := Parse([]byte("net:\n  id: imp\n  places: [{id: p, tokens: 1}]\n  transitions:\n    - {id: t, inscription: 'import math'}\n  arcs: [{source: p, target: t}]\n"))
	require.NoError(t, err)
	run, err := n.Run(ctx, policy, RunOptions{})
	require.NoError(t, err)
	require.NotNil(t, run.Result.Error)
	require.Equal(t, "ImportError", run.Result.Error.Type)
	require.Contains(t, run.Result.Error.Message, "import of 'math' is not allowed")
}
