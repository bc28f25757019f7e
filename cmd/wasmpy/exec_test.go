package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
	"github.com/wasmpy/wasmpy/internal/testing/llmtest"
)

// wasmpyCLI runs the CLI in-process and returns its status and output.
func wasmpyCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{"wasmpy"}, args...), strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func writeScript(t *testing.T, name, code string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(code), 0o644))
	return path
}

func TestExecMirrorsScript(t *testing.T) {
	script := writeScript(t, "hello.py", "import sys\nprint('hello', sys.argv[1:])\nprint('warn', file=sys.stderr)\nsys.exit(4)\n")
	code, out, errOut := wasmpyCLI(t, "", "exec", script, "a", "--json", "--", "b")
	require.Equal(t, 4, code)
	require.Equal(t, "hello ['a', '--json', '--', 'b']\n", out, "after the script, every argument is the script's, as in python3")
	require.Equal(t, "warn\n", errOut)

	code, out, _ = wasmpyCLI(t, "", "exec", "-c", "print(6*7)")
	require.Equal(t, 0, code)
	require.Equal(t, "42\n", out)

	code, out, _ = wasmpyCLI(t, "import sys; print(sys.argv)\n", "exec", "-", "x")
	require.Equal(t, 0, code)
	require.Equal(t, "['-', 'x']\n", out)

	code, out, _ = wasmpyCLI(t, "import sys; print(sys.argv)\n", "exec")
	require.Equal(t, 0, code, "no script and stdin not a terminal: stdin is the script")
	require.Equal(t, "['-']\n", out)

	code, out, _ = wasmpyCLI(t, "", "exec", "-c", "import sys; print(sys.argv)", "--json", "-i")
	require.Equal(t, 0, code)
	require.Equal(t, "['-c', '--json', '-i']\n", out)

	code, out, _ = wasmpyCLI(t, "abc", "exec", "-c", "print(input()[::-1])")
	require.Equal(t, 0, code, "exec passes its stdin by default")
	require.Equal(t, "cba\n", out)

	input := writeScript(t, "in.txt", "data")
	code, out, _ = wasmpyCLI(t, "", "exec", "--stdin", input, "-c", "import sys; print(sys.stdin.read()[::-1])")
	require.Equal(t, 0, code)
	require.Equal(t, "atad\n", out)

	code, _, errOut = wasmpyCLI(t, "", "exec", "-c", "raise KeyError('k')")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "KeyError: 'k'")
}

func TestExecJSON(t *testing.T) {
	code, out, errOut := wasmpyCLI(t, "", "exec", "--json", "--timeout", "2s", "--memory", "64MiB", "-c", "print('x')")
	require.Equal(t, 0, code, errOut)
	var res map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	require.NoError(t, dec.Decode(&res))
	require.False(t, dec.More(), "exactly one JSON object on stdout")
	require.Equal(t, "x\n", res["stdout"])
	require.Nil(t, res["error"])

	code, out, _ = wasmpyCLI(t, "", "exec", "--json", "-c", "1/0")
	require.Equal(t, 1, code)
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Equal(t, "exception", res["error"].(map[string]any)["kind"])
}

// exec grants every built-in by default; --grant narrows it.
func TestExecGrants(t *testing.T) {
	code, out, errOut := wasmpyCLI(t, "", "exec", "--json", "-c", "write_file('a.txt', 'x'); submit_result(read_file('a.txt'))")
	require.Equal(t, 0, code, errOut)
	var res struct {
		Output json.RawMessage `json:"output"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Equal(t, `"x"`, string(res.Output))

	code, _, errOut = wasmpyCLI(t, "", "exec", "--grant", "none", "-c", "submit_result(1)")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "PermissionError: capability \"submit_result\" is not granted to this run")

	code, out, errOut = wasmpyCLI(t, "", "exec", "--grant", "list_files, submit_result", "-c", `
try:
    write_file("a.txt", "x")
except PermissionError as e:
    print(e)
submit_result(list_files())`)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "capability \"write_file\" is not granted to this run\n", out)
}

func TestExecSandboxOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"timeout", []string{"--timeout", "300ms", "-c", "while True: pass"}, 124, "timed out after 300ms"},
		{"memory", []string{"--memory", "64MiB", "-c", "b = bytearray(1 << 30)"}, 121, "memory limit of 64 MiB reached"},
		{"output", []string{"--output-limit", "1KiB", "-c", "while True: print('x' * 100)"}, 122, "output limit of 1 KiB reached"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := wasmpyCLI(t, "", append([]string{"exec"}, tc.args...)...)
			require.Equal(t, tc.code, code)
			require.Contains(t, errOut, tc.msg)
		})
	}
}

// Every bad input is one line naming the problem, a non-zero status, no panic.
func TestExecBadInput(t *testing.T) {
	dir := t.TempDir()
	unreadable := writeScript(t, "secret.py", "print(1)")
	require.NoError(t, os.Chmod(unreadable, 0o000))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"exec", "--frobnicate", "x.py"}, "flag provided but not defined: -frobnicate"},
		{"bad duration", []string{"exec", "--timeout", "soon", "-c", "1"}, `--timeout "soon"`},
		{"negative duration", []string{"exec", "--timeout", "-1s", "-c", "1"}, `--timeout "-1s"`},
		{"bad size", []string{"exec", "--memory", "lots", "-c", "1"}, `--memory "lots"`},
		{"huge size", []string{"exec", "--memory", "64GiB", "-c", "1"}, "at most 4GiB"},
		{"bad fuel", []string{"exec", "--fuel", "-5", "-c", "1"}, `--fuel "-5"`},
		{"missing script", []string{"exec", filepath.Join(dir, "nope.py")}, "no such file or directory"},
		{"directory without __main__.py", []string{"exec", dir}, "can't find '__main__' module in"},
		{"empty code", []string{"exec", "-c", ""}, "empty code"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"typo", []string{"exce"}, `unknown command "exce"; did you mean "exec"? (run 'wasmpy help' for the list)`},
		{"flag typo", []string{"exec", "--timout", "2s", "-c", "1"}, "flag provided but not defined: -timout; did you mean --timeout?"},
		{"flag typo after the task", []string{"gen", "a task", "--memroy", "64MiB"}, "did you mean --memory?"},
		{"app flag typo", []string{"--verison"}, "did you mean --version?"},
		{"subcommand typo", []string{"skill", "lsit"}, `unknown command "skill lsit"; did you mean "skill list"?`},
		{"unknown subcommand", []string{"net", "foo"}, `unknown command "net foo"`},
		{"size without unit", []string{"exec", "--memory", "64", "-c", "1"}, `--memory "64": size without a unit`},
		{"no command, no terminal", []string{}, "no command given"},
		{"bad workspace", []string{"exec", "--workspace", filepath.Join(dir, "nope"), "-c", "1"}, "not a directory"},
		{"bad grant", []string{"exec", "--grant", "read_file,launch", "-c", "1"}, `--grant: no capability "launch"`},
		{"missing interpreter", []string{"exec", "--interpreter", filepath.Join(dir, "python.wasm"), "-c", "1"}, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := wasmpyCLI(t, "", tc.args...)
			require.NotEqual(t, 0, code)
			require.Empty(t, out)
			require.Contains(t, errOut, tc.want)
			require.NotContains(t, errOut, "goroutine", "a stack trace leaked")
		})
	}
	if os.Geteuid() != 0 { // root reads anything
		code, _, errOut := wasmpyCLI(t, "", "exec", unreadable)
		require.Equal(t, exitUsage, code)
		require.Contains(t, errOut, "permission denied")
	}
}

func TestCorruptInterpreterCLI(t *testing.T) {
	cache := t.TempDir()
	path := filepath.Join(cache, "interpreters", "npm-3.12.0", "python.wasm")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte("tampered"), 0o644))
	code, _, errOut := wasmpyCLI(t, "", "exec", "--cache-dir", cache, "--interpreter", "npm", "-c", "1")
	require.Equal(t, exitWasmpy, code)
	require.Contains(t, errOut, "corrupt")
	require.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
}

func TestExecFuel(t *testing.T) {
	code, _, errOut := wasmpyCLI(t, "", "exec", "--fuel", "1000000", "-c", "while True: pass")
	require.Equal(t, 123, code)
	require.Contains(t, errOut, "fuel budget of 1000000 units exhausted")

	_, out1, _ := wasmpyCLI(t, "", "exec", "--json", "--fuel", "100000000", "-c", "print(sum(range(10000)))")
	_, out2, _ := wasmpyCLI(t, "", "exec", "--json", "--fuel", "100000000", "-c", "print(sum(range(10000)))")
	var r1, r2 struct {
		Stdout   string `json:"stdout"`
		FuelUsed uint64 `json:"fuel_used"`
	}
	require.NoError(t, json.Unmarshal([]byte(out1), &r1))
	require.NoError(t, json.Unmarshal([]byte(out2), &r2))
	require.Equal(t, "49995000\n", r1.Stdout, out1)
	require.NotZero(t, r1.FuelUsed)
	require.Equal(t, r1.FuelUsed, r2.FuelUsed)
}

// Every numeric limit out of range is a usage error (2) naming the flag,
// never a wasmpy failure (125) from deeper down.
func TestLimitFlagsOutOfRange(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"exec", "--fuel", "18446744073709551615", "-c", "1"}, `--fuel "18446744073709551615": want a whole number of fuel units up to 9223372036854775807`},
		{[]string{"exec", "--fuel", "9223372036854775808", "-c", "1"}, "--fuel"},
		{[]string{"exec", "--fuel", "18446744073709551616", "-c", "1"}, "--fuel"},
		{[]string{"exec", "--memory", "4294967297B", "-c", "1"}, "at most 4GiB"},
		{[]string{"exec", "--memory", "9223372036854775808B", "-c", "1"}, "--memory"},
		{[]string{"exec", "--timeout", "9999999999h", "-c", "1"}, "--timeout"},
		{[]string{"exec", "--output-limit", "2GiB", "-c", "1"}, "--output-limit"},
		{[]string{"exec", "--llm-max-calls", "-1", "-c", "1"}, "--llm-max-calls"},
		{[]string{"exec", "--llm-max-tokens", "99999999999999999999", "-c", "1"}, "llm-max-tokens"},
		{[]string{"serve", "--db", db, "--fuel", "18446744073709551615"}, "--fuel"},
		{[]string{"serve", "--db", db, "--max-body", "9223372036854775808B"}, "--max-body"},
		{[]string{"serve", "--db", db, "--max-concurrent", "4611686018427387904"}, "--max-concurrent"},
		{[]string{"serve", "--db", db, "--max-queue", "-2"}, "--max-queue"},
		{[]string{"serve", "--db", db, "--request-timeout", "-1s"}, "--request-timeout"},
		{[]string{"history", "--db", db, "--limit", "-1"}, "--limit"},
	} {
		code, out, errOut := wasmpyCLI(t, "", tc.args...)
		require.Equal(t, exitUsage, code, "%v: %s", tc.args, errOut)
		require.Empty(t, out)
		require.Contains(t, errOut, tc.msg, tc.args)
	}
}

// Without --json, exec streams the script's output as it is written, in
// the order of its writes across stdout and stderr, and what it wrote
// before a stop reaches the terminal.
func TestExecStreams(t *testing.T) {
	var both syncBuffer
	code := run(context.Background(), []string{"wasmpy", "exec", "--timeout", "1s", "-c",
		"import sys\nprint('a')\nsys.stderr.write('b\\n')\nsys.stdout.write('c')\nwhile True: pass\n"},
		strings.NewReader(""), &both, &both)
	require.Equal(t, 124, code)
	require.Equal(t, "a\nb\nc\nwasmpy: timed out after 1s\n", both.String())

	// The first line arrives while the script still runs.
	r, w := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"wasmpy", "exec", "-c", "import time\nprint('first')\ntime.sleep(60)\n"},
			strings.NewReader(""), w, io.Discard)
		w.Close()
	}()
	line, err := bufio.NewReader(r).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "first\n", line)
	select {
	case <-done:
		t.Fatal("the run ended: the line was not streamed")
	default:
	}
	cancel()
	go io.Copy(io.Discard, r)
	<-done
}

// syncBuffer is a bytes.Buffer for stdout and stderr at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Links already in the --out directory never lead a write outside it.
func TestExecOutKeepsToItsDirectory(t *testing.T) {
	base := t.TempDir()
	victims := filepath.Join(base, "victims")
	out := filepath.Join(base, "out")
	require.NoError(t, os.MkdirAll(victims, 0o755))
	require.NoError(t, os.MkdirAll(out, 0o755))
	victim := filepath.Join(victims, "victim.txt")
	require.NoError(t, os.WriteFile(victim, []byte("intact"), 0o644))
	require.NoError(t, os.Symlink("../victims/victim.txt", filepath.Join(out, "evil")))
	require.NoError(t, os.Symlink("../victims", filepath.Join(out, "evdir")))

	code, _, errOut := wasmpyCLI(t, "", "exec", "--out", out, "-c", `write_file("evil", "PWNED")`)
	require.Equal(t, 0, code, errOut)
	got, err := os.ReadFile(filepath.Join(out, "evil"))
	require.NoError(t, err)
	require.Equal(t, "PWNED", string(got), "the link is replaced by the file")
	fi, err := os.Lstat(filepath.Join(out, "evil"))
	require.NoError(t, err)
	require.True(t, fi.Mode().IsRegular())

	code, _, errOut = wasmpyCLI(t, "", "exec", "--out", out, "-c", `write_file("evdir/new.txt", "x")`)
	require.Equal(t, 125, code)
	require.Equal(t, "wasmpy: --out "+out+": evdir/new.txt: refused: a symlink on the way leads out of "+out+"\n", errOut)

	// --json still prints its one object (the run's), and the same one line.
	code, stdout, errOut := wasmpyCLI(t, "", "exec", "--json", "--out", out, "-c", `write_file("evdir/new.txt", "x"); submit_result(1)`)
	require.Equal(t, 125, code)
	dec := json.NewDecoder(strings.NewReader(stdout))
	var res map[string]any
	require.NoError(t, dec.Decode(&res), "stdout: %q", stdout)
	require.False(t, dec.More(), "exactly one JSON object on stdout")
	require.Equal(t, 1.0, res["output"])
	require.Equal(t, "wasmpy: --out "+out+": evdir/new.txt: refused: a symlink on the way leads out of "+out+"\n", errOut)

	got, err = os.ReadFile(victim)
	require.NoError(t, err)
	require.Equal(t, "intact", string(got))
	entries, err := os.ReadDir(victims)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing created outside --out")
}

// Output streams: a pipe gets all of it, with no cap by default, and a
// script can read an endless stdin as it arrives.
func TestExecStreamsWithoutCap(t *testing.T) {
	// 4.6 MiB: past the 4 MiB that --json keeps.
	code, out, errOut := wasmpyCLI(t, "", "exec", "--timeout", "5m", "-c", "for i in range(700000): print(i)")
	require.Equal(t, 0, code, errOut)
	require.True(t, strings.HasSuffix(out, "\n699998\n699999\n"), "the end of the output: %q", out[max(len(out)-20, 0):])
	require.Equal(t, 4788890, len(out))

	var stdout, stderr bytes.Buffer
	yes := io.MultiReader(strings.NewReader("first\n"), endless("y\n"))
	code = run(context.Background(), []string{"wasmpy", "exec", "--stdin", "-", "-c",
		"import sys\nfor i, line in enumerate(sys.stdin):\n    if i == 200000: break\nprint(i, line.strip())"},
		yes, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	require.Equal(t, "200000 y\n", stdout.String())

	code, out, errOut = wasmpyCLI(t, "", "exec", "--output-limit", "0", "--json", "-c", "print('x' * (5 << 20))")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"stdout_truncated": false`)
}

type endless string

func (e endless) Read(p []byte) (int, error) {
	n := 0
	for n+len(e) <= len(p) {
		n += copy(p[n:], e)
	}
	return n, nil
}

// A run stopped from outside still prints exactly one JSON object.
func TestExecJSONInterrupted(t *testing.T) {
	llm := llmtest.New(t, llmtest.Reply{Content: "go on"})
	cmd := exec.Command(wasmpyBinary(t), "exec", "--json", "--llm-base-url", llm.URL(), "--llm-model", "m",
		"-c", "print('partial', flush=True)\nask_llm('started')\nwhile True: pass")
	var out bytes.Buffer
	cmd.Stdout = &out
	require.NoError(t, cmd.Start())
	for len(llm.Requests()) == 0 { // the script has started
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	err := cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, console.ExitSIGTERM, ee.ExitCode())
	var res struct {
		ExitCode int    `json:"exit_code"`
		Stdout   string `json:"stdout"`
		Error    struct {
			Kind    string `json:"kind"`
			Message string `json:"message"`
		} `json:"error"`
	}
	dec := json.NewDecoder(&out)
	require.NoError(t, dec.Decode(&res))
	require.False(t, dec.More(), "exactly one JSON object")
	require.Equal(t, "partial\n", res.Stdout)
	require.Equal(t, "interrupted", res.Error.Kind)
	require.Equal(t, "stopped: SIGTERM", res.Error.Message)
	require.Equal(t, console.ExitSIGTERM, res.ExitCode)
}

func TestExecShowsResult(t *testing.T) {
	code, out, errOut := wasmpyCLI(t, "", "exec", "-c", "print('x'); submit_result({'n': 1})")
	require.Equal(t, 0, code)
	require.Equal(t, "x\n", out)
	require.Equal(t, "wasmpy: submit_result: {\"n\":1}\n", errOut)
}

func TestHelpVersionCompletion(t *testing.T) {
	code, out, _ := wasmpyCLI(t, "", "help")
	require.Equal(t, 0, code)
	require.Contains(t, out, "COMMANDS:")
	code, out, _ = wasmpyCLI(t, "", "help", "exec")
	require.Equal(t, 0, code)
	require.Contains(t, out, "wasmpy exec")
	code, out, _ = wasmpyCLI(t, "", "--version")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^(core|npm) interpreter: CPython 3\.\d+\.\d+, sha256 [0-9a-f]{64}$`, out)
	code, out, _ = wasmpyCLI(t, "", "completion", "bash")
	require.Equal(t, 0, code)
	require.Contains(t, out, "complete -o default -F _wasmpy wasmpy")
	// urfave/cli reads the word to complete from os.Args: run the binary.
	b, err := exec.Command(wasmpyBinary(t), "exec", "--js", "--generate-bash-completion").Output()
	require.NoError(t, err)
	require.Equal(t, "--json\n", string(b))
}

// Under the npm build the runner's report travels on stderr: it is cut
// from the stream, not shown to the user.
func TestExecStreamsNoReport(t *testing.T) {
	code, out, errOut := wasmpyCLI(t, "", "exec", "--interpreter", "npm", "-c", "print('x')\n1/0")
	require.Equal(t, 1, code, errOut)
	require.Equal(t, "x\n", out)
	require.True(t, strings.HasSuffix(errOut, "ZeroDivisionError: division by zero\n"), errOut)
	require.NotContains(t, errOut, "wasmpy-report")
}

// exec has no wall-clock limit unless --timeout or --tier asks for one,
// as python3 has none: the trusted tier's timeout (here made short by a
// tiers file, 30s built in) does not stop a script that runs longer.
func TestExecHasNoWallClockLimitByDefault(t *testing.T) {
	tiersFile := writeScript(t, "tiers.yaml", "tiers:\n  - name: trusted\n    extends: trusted\n    limits: {timeout: 200ms}\n")
	const script = "import time\ntime.sleep(0.6)\nprint('done')\n"
	code, out, errOut := wasmpyCLI(t, "", "exec", "--tiers", tiersFile, "-c", script)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "done\n", out)

	code, _, errOut = wasmpyCLI(t, "", "exec", "--tiers", tiersFile, "--tier", "trusted", "-c", script)
	require.Equal(t, 124, code, "--tier asks for the tier's timeout")
	require.Contains(t, errOut, "timed out after 200ms")
	code, _, errOut = wasmpyCLI(t, "", "exec", "--tiers", tiersFile, "--timeout", "200ms", "-c", script)
	require.Equal(t, 124, code, "--timeout asks for one")
	require.Contains(t, errOut, "timed out after 200ms")

	code, out, _ = wasmpyCLI(t, "", "exec", "--help")
	require.Equal(t, 0, code)
	require.Contains(t, out, "no wall-clock limit unless --timeout")
}

// The runner's frames never show in a user's traceback, in the REPL too:
// time.sleep is the runner's wrapper (it flushes stdout first), and a
// KeyboardInterrupt or an error inside it showed File "<wasmpy-runner>".
func TestREPLTracebackHidesRunnerFrames(t *testing.T) {
	code, _, errOut := wasmpyCLI(t, "import time\ntime.sleep(-1)\n", "exec", "-i", "-c", "x = 1")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "Traceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>\nValueError: sleep length must be non-negative\n")
	require.NotContains(t, errOut, "<wasmpy-runner>")
	code, _, errOut = wasmpyCLI(t, "", "exec", "-c", "import time\ntime.sleep(-1)")
	require.Equal(t, 1, code)
	require.NotContains(t, errOut, "<wasmpy-runner>")
}
