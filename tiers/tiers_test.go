package tiers_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/tiers"
)

func newSandbox(t *testing.T) *wasmpy.Sandbox {
	t.Helper()
	sb, err := wasmpy.New(context.Background(), wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER")})
	require.NoError(t, err, "run `make` first to install the interpreter")
	t.Cleanup(func() { sb.Close(context.Background()) })
	return sb
}

func lookup(t *testing.T, s *tiers.Set, name string) *tiers.Tier {
	t.Helper()
	tier, err := s.Lookup(name)
	require.NoError(t, err)
	return tier
}

// The built-in tiers bind in the real interpreter: the same code spends
// its fuel in sandbox and finishes in trusted; a capability and an import
// that sandbox does not allow are refused, and trusted allows them.
func TestTiersBind(t *testing.T) {
	ctx := context.Background()
	sb := newSandbox(t)
	set := tiers.Defaults()
	sandbox, testing_, trusted := lookup(t, set, tiers.Sandbox), lookup(t, set, tiers.Testing), lookup(t, set, tiers.Trusted)
	all := wasmpy.Builtins()

	// Fuel: a loop without end spends sandbox's 1e9 units, whatever an
	// iteration costs in this build; trusted is unmetered and finishes a
	// long one. (A long timeout keeps the machine's speed out of it.)
	forever := wasmpy.Job{Code: "s = 0\nwhile True: s += 1", Grants: all, Limits: wasmpy.Limits{Timeout: 10 * time.Minute}}
	spin := wasmpy.Job{Code: "s = 0\nfor i in range(3_000_000): s += i\nsubmit_result(s)", Grants: all,
		Limits: wasmpy.Limits{Timeout: 10 * time.Minute}}
	res, err := sb.Run(ctx, sandbox.Apply(forever))
	require.NoError(t, err)
	require.NotNil(t, res.Error)
	require.Equal(t, wasmpy.KindFuel, res.Error.Kind, "sandbox's fuel runs out")
	require.Equal(t, uint64(1_000_000_000), res.FuelUsed)
	require.Equal(t, tiers.Sandbox, res.Tier)
	res, err = sb.Run(ctx, trusted.Apply(spin))
	require.NoError(t, err)
	require.Nil(t, res.Error, "trusted is unmetered")
	require.JSONEq(t, "4499998500000", string(res.Output))
	require.Equal(t, tiers.Trusted, res.Tier)

	// Memory: 100 MiB is past sandbox's 64 MiB, within trusted's.
	big := wasmpy.Job{Code: "b = bytearray(100 << 20)\nprint(len(b))"}
	res, err = sb.Run(ctx, sandbox.Apply(big))
	require.NoError(t, err)
	require.NotNil(t, res.Error)
	require.Equal(t, wasmpy.KindMemory, res.Error.Kind)
	res, err = sb.Run(ctx, trusted.Apply(big))
	require.NoError(t, err)
	require.Nil(t, res.Error)

	// A capability sandbox does not grant raises PermissionError, though
	// the job asked for every built-in.
	read := wasmpy.Job{Code: "print(read_file('a.txt'))", Grants: all, Workspace: t.TempDir()}
	require.NoError(t, os.WriteFile(filepath.Join(read.Workspace, "a.txt"), []byte("hello"), 0o644))
	res, err = sb.Run(ctx, sandbox.Apply(read))
	require.NoError(t, err)
	require.NotNil(t, res.Error)
	require.Equal(t, "PermissionError", res.Error.Type)
	res, err = sb.Run(ctx, testing_.Apply(read))
	require.NoError(t, err)
	require.Nil(t, res.Error)
	require.Equal(t, "hello\n", res.Stdout)

	// An import outside sandbox's list is refused; testing allows any.
	imp := wasmpy.Job{Code: "import os\nprint(os.sep)"}
	res, err = sb.Run(ctx, sandbox.Apply(imp))
	require.NoError(t, err)
	require.NotNil(t, res.Error)
	require.Contains(t, res.Error.Message, "import of 'os' is not allowed")
	res, err = sb.Run(ctx, testing_.Apply(imp))
	require.NoError(t, err)
	require.Nil(t, res.Error)

	// The time limit, in a tier of a file: code that never ends is
	// stopped at it.
	brief, err := tiers.Parse([]byte("tiers:\n  - {name: brief, extends: trusted, limits: {timeout: 1s}}\n"))
	require.NoError(t, err)
	res, err = sb.Run(ctx, lookup(t, brief, "brief").Apply(wasmpy.Job{Code: "while True: pass"}))
	require.NoError(t, err)
	require.NotNil(t, res.Error)
	require.Equal(t, wasmpy.KindTimeout, res.Error.Kind)
	require.Equal(t, "brief", res.Tier)
}

func TestApply(t *testing.T) {
	set := tiers.Defaults()
	sandbox := lookup(t, set, tiers.Sandbox)
	job := sandbox.Apply(wasmpy.Job{Limits: wasmpy.Limits{Timeout: time.Second}, Grants: wasmpy.Builtins(),
		AllowImports: []string{"math", "os"}})
	require.Equal(t, time.Second, job.Limits.Timeout, "the job's own limit stays")
	require.Equal(t, uint64(64<<20), job.Limits.Memory, "the rest are the tier's")
	require.Equal(t, uint64(1_000_000_000), job.Limits.Fuel)
	require.Equal(t, []wasmpy.Capability{wasmpy.SubmitResult}, job.Grants)
	require.Equal(t, []string{"math"}, job.AllowImports, "both lists must allow a module")
	require.Equal(t, wasmpy.ReadFile, sandbox.Refused([]wasmpy.Capability{wasmpy.SubmitResult, wasmpy.ReadFile}))
	require.Empty(t, sandbox.Refused([]wasmpy.Capability{wasmpy.SubmitResult}))

	trusted := lookup(t, set, tiers.Trusted)
	require.Nil(t, trusted.Apply(wasmpy.Job{}).AllowImports, "trusted: any module")
	// A job asking for more than its tier gets the tier's, field by field.
	job = sandbox.Apply(wasmpy.Job{Limits: wasmpy.Limits{Timeout: time.Hour, Memory: 200 << 20, Output: wasmpy.NoOutputLimit}})
	require.Equal(t, sandbox.Limits, job.Limits)
	require.Equal(t, wasmpy.Limits{Timeout: time.Second, Memory: 256 << 20, Fuel: 7},
		trusted.Apply(wasmpy.Job{Limits: wasmpy.Limits{Timeout: time.Second, Fuel: 7}}).Limits, "trusted: unmetered, so the job's fuel stands")
}

func TestWithin(t *testing.T) {
	set := tiers.Defaults()
	require.NoError(t, set.Within(tiers.Sandbox, tiers.Testing))
	require.NoError(t, set.Within(tiers.Testing, tiers.Testing))
	require.NoError(t, set.Within(tiers.Trusted, ""), "no maximum")
	err := set.Within(tiers.Trusted, tiers.Testing)
	require.ErrorIs(t, err, tiers.ErrAboveMax)
	require.ErrorContains(t, err, `tier "trusted" is more trusted than "testing"`)
	require.ErrorIs(t, set.Within("root", ""), tiers.ErrUnknown)
	require.ErrorContains(t, set.Within("root", ""), "have sandbox, testing, trusted")
	require.Equal(t, tiers.Sandbox, set.Strictest().Name)
	require.Equal(t, tiers.Trusted, set.Loosest().Name)
}

func TestParse(t *testing.T) {
	set, err := tiers.Parse([]byte(`
tiers:
  - name: locked
    description: nothing but arithmetic
    limits: {timeout: 1s, memory: 48MiB, output: 64KiB, fuel: 100000000}
    capabilities: []
    imports: [math]
    validation: strict
  - name: ci
    extends: testing
    limits: {timeout: 60s}
    imports: any
  - name: ci-llm
    extends: ci
    capabilities: [submit_result, ask_llm]
`))
	require.NoError(t, err)
	require.Equal(t, []string{"locked", "ci", "ci-llm"}, set.Names())
	locked := lookup(t, set, "locked")
	require.Equal(t, wasmpy.Limits{Timeout: time.Second, Memory: 48 << 20, Output: 64 << 10, Fuel: 100_000_000}, locked.Limits)
	require.Empty(t, locked.Capabilities)
	require.Equal(t, []string{"math"}, locked.AllowImports)
	ci := lookup(t, set, "ci")
	testing_ := lookup(t, tiers.Defaults(), tiers.Testing)
	require.Equal(t, time.Minute, ci.Limits.Timeout)
	require.Equal(t, testing_.Limits.Memory, ci.Limits.Memory, "the rest is testing's")
	require.Equal(t, testing_.Capabilities, ci.Capabilities)
	require.Equal(t, tiers.Standard, ci.Validation)
	require.Nil(t, ci.AllowImports)
	llm := lookup(t, set, "ci-llm")
	require.Equal(t, []wasmpy.Capability{wasmpy.SubmitResult, wasmpy.AskLLM}, llm.Capabilities)
	require.Equal(t, time.Minute, llm.Limits.Timeout, "extends an earlier tier of the file")
	require.Error(t, set.Within("ci-llm", "ci"), "the file's order is the order of trust")
}

// A bad file reports every problem, each with its line and where.
func TestParseErrors(t *testing.T) {
	_, err := tiers.Parse([]byte(`
tiers:
  - name: Bad Name
    limits: {timeout: 5x, memory: 8TiB, output: 0, fuel: -1, cpu: 2}
    capabilities: [submit_result, network]
    imports: [math, "os.path"]
    validation: paranoid
  - name: ci
    extends: nope
  - name: ci
    extends: sandbox
  - name: partial
    limits: {timeout: 1s}
    color: blue
`))
	var te *tiers.Error
	require.True(t, errors.As(err, &te), "%v", err)
	var got []string
	for _, p := range te.Problems {
		got = append(got, p.String())
	}
	require.Equal(t, []string{
		`line 3: tiers[0].name: "Bad Name": want lowercase letters, digits, - and _, starting with a letter (at most 32)`,
		`line 4: tiers[0].limits.cpu: unknown field (want timeout, memory, output, fuel)`,
		`line 4: tiers[0].limits.timeout: "5x": want a positive duration such as 500ms, 5s or 1m`,
		`line 4: tiers[0].limits.memory: "8TiB": want a size from 1 byte to 4GiB, such as 64MiB`,
		`line 4: tiers[0].limits.output: "0": want a size from 1 byte to 1GiB, such as 1MiB`,
		`line 4: tiers[0].limits.fuel: "-1": want a whole number of fuel units up to 9223372036854775807, or none (unmetered)`,
		`line 5: tiers[0].capabilities[1]: no capability "network" (want some of read_file, write_file, list_files, search_files, ask_llm, embed, submit_result, http_request)`,
		`line 6: tiers[0].imports[1]: "os.path" is not a top-level module name`,
		`line 7: tiers[0].validation: "paranoid": want strict, standard or syntax`,
		`line 9: tiers[1].extends: no tier "nope" to extend (want a built-in, sandbox, testing, trusted, or a tier above this one)`,
		`line 10: tiers[2].name: "ci" is defined twice`,
		`line 14: tiers[3].color: unknown field (want name, description, extends, limits, capabilities, imports, validation)`,
		`line 12: tiers[3].capabilities: missing (a tier that extends none gives it)`,
		`line 12: tiers[3].imports: missing (a tier that extends none gives it)`,
		`line 12: tiers[3].validation: missing (a tier that extends none gives it)`,
		`line 13: tiers[3].limits.memory: missing (a tier that extends none gives it)`,
		`line 13: tiers[3].limits.output: missing (a tier that extends none gives it)`,
	}, got)

	for _, tc := range []struct{ doc, want string }{
		{"", "empty: want a mapping with a tiers list"},
		{"tiers: [", "not YAML"},
		{"other: 1", "line 1: other: unknown field (want tiers)"},
		{"tiers: []", "tiers: want a non-empty list of tiers"},
		{"tiers:\n  - &a {name: x, extends: sandbox}\n  - *a", "YAML aliases are not allowed"},
		{"- a\n- b", "want a mapping with tiers"},
	} {
		_, err := tiers.Parse([]byte(tc.doc))
		require.ErrorContains(t, err, tc.want, "%q", tc.doc)
	}

	path := filepath.Join(t.TempDir(), "tiers.yaml")
	require.NoError(t, os.WriteFile(path, []byte("tiers:\n  - {name: x, extends: sandbox, validation: lax}\n"), 0o644))
	_, err = tiers.Load(path)
	require.EqualError(t, err, `tiers: `+path+`: line 2: tiers[0].validation: "lax": want strict, standard or syntax`)
	_, err = tiers.Load(filepath.Join(t.TempDir(), "missing.yaml"))
	require.ErrorContains(t, err, "no such file")
	require.NoError(t, os.WriteFile(path, []byte("tiers:\n  - "+strings.Repeat("x", 1<<20)), 0o644))
	_, err = tiers.Load(path)
	require.ErrorContains(t, err, "larger than 1048576 bytes")
}
