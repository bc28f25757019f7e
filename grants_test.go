package wasmpy_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/hostfuncs"
)

// probeBuiltins calls each built-in three ways: as a builtin, from the wasmpy
// module, and straight through the transport (which only the host can
// refuse), and prints what each did.
const probeBuiltins = `
import wasmpy
calls = {
    "read_file": (("notes.txt",), {"path": "notes.txt"}),
    "write_file": (("o.txt", "x"), {"path": "o.txt", "data_b64": "eA=="}),
    "list_files": (("*",), {"pattern": "*"}),
    "search_files": (("alpha",), {"pattern": "alpha"}),
    "ask_llm": (("hi",), {"prompt": "hi"}),
    "submit_result": ((1,), {"value": 1}),
}
for name, (args, kwargs) in calls.items():
    for how, fn in (("builtin", lambda: getattr(__builtins__, name)(*args)),
                    ("module", lambda: getattr(wasmpy, name)(*args)),
                    ("transport", lambda: wasmpy._call(name, kwargs))):
        try:
            fn()
            print(name, how, "ran")
        except Exception as e:
            print(name, how, type(e).__name__, e)
`

func TestNothingGrantedByDefault(t *testing.T) {
	res := run(t, wasmpy.Job{Workspace: stableDir(t), Code: probeBuiltins})
	require.Nil(t, res.Error, res.Stderr)
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	require.Len(t, lines, 18)
	for _, line := range lines {
		name, _, _ := strings.Cut(line, " ")
		require.Regexp(t, `^\w+ \w+ PermissionError capability "`+name+`" is not granted to this run$`, line)
	}
	require.Empty(t, res.HostCalls, "a refused call ran nothing")
	require.Empty(t, res.Files)
	require.JSONEq(t, "null", string(res.Output))
}

func TestGrantedCapabilityWorks(t *testing.T) {
	res := run(t, wasmpy.Job{Workspace: stableDir(t), Grants: []wasmpy.Capability{wasmpy.ReadFile, wasmpy.SubmitResult}, Code: probeBuiltins})
	require.Nil(t, res.Error, res.Stderr)
	out := res.Stdout
	for _, how := range []string{"builtin", "module", "transport"} {
		require.Contains(t, out, "read_file "+how+" ran\n")
		require.Contains(t, out, "write_file "+how+` PermissionError capability "write_file" is not granted to this run`+"\n")
		require.Contains(t, out, "ask_llm "+how+" PermissionError")
	}
	require.Contains(t, out, "submit_result builtin ran\n")
	require.Contains(t, out, "submit_result module ResultError") // once per run
	require.Equal(t, "1", string(res.Output))
	require.Empty(t, res.Files)
}

// One Sandbox serves jobs with different grants at once, and no job sees
// another's.
func TestGrantSetsConcurrently(t *testing.T) {
	sb := testSandbox(t)
	dir := stableDir(t)
	code := `
def try_(fn):
    try:
        return fn()
    except PermissionError:
        return "refused"
print(try_(lambda: read_file("notes.txt").split()[0]), try_(lambda: submit_result(7)) or "submitted")
`
	files := []wasmpy.Capability{wasmpy.ReadFile}
	submit := []wasmpy.Capability{wasmpy.SubmitResult}
	results := make([]*wasmpy.Result, 8)
	errs := make([]error, len(results))
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			grants := files
			if i%2 == 1 {
				grants = submit
			}
			results[i], errs[i] = sb.Run(context.Background(), wasmpy.Job{Workspace: dir, Grants: grants, Code: code})
		}()
	}
	wg.Wait()
	for i, res := range results {
		require.NoError(t, errs[i])
		require.Nil(t, res.Error, res.Stderr)
		if i%2 == 0 {
			require.Equal(t, "alpha refused\n", res.Stdout, i)
			require.JSONEq(t, "null", string(res.Output))
		} else {
			require.Equal(t, "refused submitted\n", res.Stdout, i)
			require.Equal(t, "7", string(res.Output))
		}
	}
}

func TestHostFuncsAreGranted(t *testing.T) {
	type addArgs struct{ X, Y int }
	sb := newSandbox(t, wasmpy.Config{
		HostFuncs: hostfuncs.Table{
			"add": hostfuncs.Typed(func(ctx context.Context, a addArgs) (int, error) {
				if a.X < 0 {
					return 0, hostfuncs.Errorf(hostfuncs.ValueError, "x must not be negative")
				}
				return a.X + a.Y, nil
			}),
			// Replaces the built-in, for the runs granted ask_llm.
			"ask_llm": hostfuncs.Typed(func(ctx context.Context, a struct{ Prompt string }) (string, error) {
				return "canned: " + a.Prompt, nil
			}),
		},
	})
	granted := runIn(t, sb, wasmpy.Job{Grants: []wasmpy.Capability{"add", wasmpy.AskLLM}, Code: `
print(add(X=2, Y=3))
import wasmpy
print(wasmpy.add(X=1, Y=1))
try:
    add(X=-1, Y=0)
except ValueError as e:
    print("refused:", e)
print(ask_llm(prompt="hi"))
`})
	require.Nil(t, granted.Error, granted.Stderr)
	require.Equal(t, "5\n2\nrefused: x must not be negative\ncanned: hi\n", granted.Stdout)

	// Not granted, an embedder's function does not exist in the guest, and
	// the host refuses it by name.
	res := runIn(t, sb, wasmpy.Job{Code: `
import wasmpy
for fn in (lambda: add(X=1, Y=2), lambda: wasmpy.add(X=1, Y=2), lambda: wasmpy._call("add", {"X": 1, "Y": 2})):
    try:
        fn()
    except Exception as e:
        print(type(e).__name__, e)
`})
	require.Nil(t, res.Error, res.Stderr)
	require.Equal(t, "NameError name 'add' is not defined\n"+
		"AttributeError module 'wasmpy' has no attribute 'add'\n"+
		`PermissionError capability "add" is not granted to this run`+"\n", res.Stdout)

	// Config.Grants reach every job.
	sb = newSandbox(t, wasmpy.Config{Grants: []wasmpy.Capability{"add"},
		HostFuncs: hostfuncs.Table{"add": hostfuncs.Typed(func(ctx context.Context, a addArgs) (int, error) { return a.X + a.Y, nil })}})
	res = runIn(t, sb, wasmpy.Job{Code: "print(add(X=40, Y=2))"})
	require.Equal(t, "42\n", res.Stdout, res.Stderr)
}

func TestUnknownGrants(t *testing.T) {
	ctx := context.Background()
	_, err := testSandbox(t).Run(ctx, wasmpy.Job{Code: "pass", Grants: []wasmpy.Capability{wasmpy.ReadFile, "launch_missiles"}})
	require.EqualError(t, err, `wasmpy: Job.Grants: no capability "launch_missiles" (have read_file, write_file, list_files, search_files, ask_llm, embed, submit_result, http_request)`)

	noop := hostfuncs.Typed(func(ctx context.Context, a struct{}) (int, error) { return 0, nil })
	for _, tc := range []struct {
		cfg  wasmpy.Config
		want string
	}{
		{wasmpy.Config{Grants: []wasmpy.Capability{"Read_File"}}, `Config.Grants: no capability "Read_File"`},
		{wasmpy.Config{Grants: []wasmpy.Capability{"price"}, HostFuncs: hostfuncs.Table{"prices": noop}},
			`no capability "price" (have read_file, write_file, list_files, search_files, ask_llm, embed, submit_result, http_request, prices)`},
		{wasmpy.Config{HostFuncs: hostfuncs.Table{"_job": noop}}, `"_job" is not a Python identifier`},
		{wasmpy.Config{HostFuncs: hostfuncs.Table{"get-price": noop}}, `"get-price" is not a Python identifier`},
		{wasmpy.Config{HostFuncs: hostfuncs.Table{"class": noop}}, `"class" is not a Python identifier`},
		{wasmpy.Config{HostFuncs: hostfuncs.Table{"price": nil}}, `"price" has a nil function`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			_, err := wasmpy.New(ctx, tc.cfg)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestRunAfterClose(t *testing.T) {
	sb, err := wasmpy.New(context.Background(), wasmpy.Config{})
	require.NoError(t, err)
	require.NoError(t, sb.Close(context.Background()))
	_, err = sb.Run(context.Background(), wasmpy.Job{Code: "pass"})
	require.ErrorIs(t, err, wasmpy.ErrClosed)
}

func TestResultErr(t *testing.T) {
	res := run(t, wasmpy.Job{Code: "print(1)"})
	require.NoError(t, res.Err())
	res = run(t, wasmpy.Job{Code: "raise KeyError('k')"})
	var e *wasmpy.Error
	require.ErrorAs(t, res.Err(), &e)
	require.Equal(t, wasmpy.KindException, e.Kind)
	require.Equal(t, fmt.Sprint(res.Err()), "wasmpy: exception: KeyError: 'k'")
}

// An embedder's function takes positional arguments in the order its
// argument struct declares its fields, keyword ones by name, or both, as a
// Python function would (issue 30: price('apple') was a TypeError).
func TestHostFuncPositionalArguments(t *testing.T) {
	type quoteArgs struct {
		SKU      string `json:"sku"`
		Quantity int    `json:"quantity"`
		Currency string
		internal int    // unexported: not a parameter
		Skipped  string `json:"-"`
	}
	sb := newSandbox(t, wasmpy.Config{HostFuncs: hostfuncs.Table{"quote": hostfuncs.Typed(func(ctx context.Context, a quoteArgs) (string, error) {
		return fmt.Sprintf("%s x%d %s", a.SKU, a.Quantity, a.Currency), nil
	})}})
	res := runIn(t, sb, wasmpy.Job{Grants: []wasmpy.Capability{"quote"}, Code: `
print(quote('apple'))
print(quote('apple', 3, 'EUR'))
print(quote('pear', quantity=2))
print(quote(sku='fig', Currency='USD'))
for bad in (lambda: quote('a', 1, 'EUR', 'extra'), lambda: quote('a', sku='b')):
    try:
        bad()
    except TypeError as e:
        print('TypeError:', e)
`})
	require.Nil(t, res.Error, "%s", res.Stderr)
	require.Equal(t, "apple x0 \napple x3 EUR\npear x2 \nfig x0 USD\n"+
		"TypeError: takes 3 positional arguments (sku, quantity, Currency) but 4 were given\n"+
		"TypeError: got multiple values for argument \"sku\"\n", res.Stdout)
}
