package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/resident"
)

// TestMain gives every test that runs the binary a runtime and a config dir of its own,
// so that the residents they start (exec starts one) never reach the
// user's, and stops them at the end.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wr")
	if err == nil {
		os.Setenv("XDG_RUNTIME_DIR", dir)
		// The session key (exec --session) of the tests' own user.
		os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	}
	code := m.Run()
	if err == nil {
		if binPath != "" {
			stopResident(binPath, os.Environ())
		}
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// residentEnv is the environment of a test's wasmpy processes: a runtime
// dir of the test's own (short: a socket path has at most 108 bytes),
// whose resident is stopped, and waited for, when the test ends.
func residentEnv(t *testing.T, extra ...string) (env []string, runtimeDir string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "wr")
	require.NoError(t, err)
	env = append(os.Environ(), append([]string{"XDG_RUNTIME_DIR=" + dir}, extra...)...)
	bin := wasmpyBinary(t)
	t.Cleanup(func() {
		stopResident(bin, env)
		os.RemoveAll(dir)
	})
	return env, dir
}

// stopResident stops the resident of env, if one runs, and waits for its
// process to end.
func stopResident(bin string, env []string) {
	pid := residentPID(bin, env)
	cmd := exec.Command(bin, "resident", "stop")
	cmd.Env = env
	cmd.Run()
	for deadline := time.Now().Add(waitLimit); pid != 0 && time.Now().Before(deadline); {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var statusLine = regexp.MustCompile(`^pid (\d+), up .*, (\d+) runs`)

// residentStatus returns the pid of env's resident and the runs it has
// served; pid 0: none runs.
func residentRuns(t *testing.T, env []string) (pid, runs int) {
	t.Helper()
	cmd := exec.Command(wasmpyBinary(t), "resident", "status")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return 0, 0
	}
	m := statusLine.FindStringSubmatch(string(out))
	require.NotNil(t, m, "status: %q", out)
	pid, _ = strconv.Atoi(m[1])
	runs, _ = strconv.Atoi(m[2])
	return pid, runs
}

func residentPID(bin string, env []string) int {
	cmd := exec.Command(bin, "resident", "status")
	cmd.Env = env
	out, err := cmd.Output()
	if m := statusLine.FindStringSubmatch(string(out)); err == nil && m != nil {
		pid, _ := strconv.Atoi(m[1])
		return pid
	}
	return 0
}

func startTestResident(t *testing.T, env []string, args ...string) int {
	t.Helper()
	cmd := exec.Command(wasmpyBinary(t), append([]string{"resident", "start"}, args...)...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	pid, _ := residentRuns(t, env)
	require.NotZero(t, pid)
	return pid
}

type outcome struct {
	Stdout, Stderr string
	Code           int
}

// wasmpyIn runs the binary in dir with stdin and returns what it did.
func wasmpyIn(t *testing.T, env []string, dir string, stdin io.Reader, args ...string) outcome {
	t.Helper()
	cmd := exec.Command(wasmpyBinary(t), args...)
	var out, errOut bytes.Buffer
	cmd.Env, cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr = env, dir, stdin, &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return outcome{out.String(), errOut.String(), code}
}

// A run through the resident prints, byte for byte, what a run in the
// client's own process prints, and exits with the same status: scripts
// with relative paths, -c, -m, stdin as code and as input, errors, limits,
// --json, --out, the workspace.
func TestResidentMatchesInProcess(t *testing.T) {
	env, _ := residentEnv(t)
	startTestResident(t, env)
	dir := t.TempDir()
	files := map[string]string{
		"hello.py":        "import sys\nprint('hello', sys.argv)\nprint('to stderr', file=sys.stderr)\n",
		"fail.py":         "def f():\n    raise ValueError('bad')\nf()\n",
		"syntax.py":       "print('a'\n",
		"exit.py":         "import sys\nsys.stdout.write('partial')\nsys.exit(3)\n",
		"echo.py":         "import sys\nfor line in sys.stdin:\n    print('got', line.rstrip())\n",
		"writes.py":       "write_file('out/a.txt', 'A')\nsubmit_result({'n': 1})\nprint(read_file('data.txt'))\n",
		"mod.py":          "import sys\nprint('module', __name__, sys.argv[1:])\n",
		"app/__main__.py": "import helper\nprint(helper.X)\n",
		"app/helper.py":   "X = 42\n",
		"ws/data.txt":     "from the workspace",
		"input.txt":       "one\ntwo\n",
	}
	for name, text := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	cases := []struct {
		name  string
		stdin string
		args  []string
	}{
		{"script", "", []string{"exec", "hello.py", "a", "--json"}},
		{"code", "", []string{"exec", "-c", "print(6*7)"}},
		{"stdin code", "print('from stdin')\n", []string{"exec", "-"}},
		{"stdin input", "x\ny\n", []string{"exec", "echo.py"}},
		{"stdin file", "", []string{"exec", "--stdin", "input.txt", "echo.py"}},
		{"exception", "", []string{"exec", "fail.py"}},
		{"syntax", "", []string{"exec", "syntax.py"}},
		{"exit status", "", []string{"exec", "exit.py"}},
		{"module", "", []string{"exec", "-m", "mod", "x"}},
		{"app dir", "", []string{"exec", "app"}},
		{"json", "", []string{"exec", "--json", "fail.py"}},
		{"workspace and out", "", []string{"exec", "--workspace", "ws", "--out", "outdir", "writes.py"}},
		{"timeout", "", []string{"exec", "--timeout", "1s", "-c", "while True: pass"}},
		{"fuel", "", []string{"exec", "--fuel", "1000", "-c", "while True: pass"}},
		{"memory", "", []string{"exec", "--memory", "64MiB", "-c", "x = bytearray(100 << 20)"}},
		{"output limit", "", []string{"exec", "--output-limit", "1KiB", "-c", "print('x' * 5000)"}},
		{"grant", "", []string{"exec", "--grant", "none", "-c", "read_file('x')"}},
		{"tier", "", []string{"exec", "--json", "--tier", "sandbox", "-c", "import os"}},
		{"no script", "", []string{"exec", "missing.py"}},
		{"interpreter", "", []string{"exec", "--interpreter", "npm", "-c", "import sys; print(sys.version_info[:2])"}},
		{"core interpreter", "", []string{"exec", "--json", "--interpreter", "core", "-c", "submit_result(1)"}},
		{"former name", "", []string{"exec", "--json", "--interpreter", "wasmpy", "-c", "submit_result(1)"}}, // core's, still accepted
	}
	normalize := func(s string) string { // what differs between any two runs
		return regexp.MustCompile(`"(duration_ms|queued_ms|memory_peak_bytes)": [0-9.e+-]+`).ReplaceAllString(s, `"$1": 0`)
	}
	served := 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			os.RemoveAll(filepath.Join(dir, "outdir"))
			local := wasmpyIn(t, append(env, "WASMPY_RESIDENT=0"), dir, strings.NewReader(tc.stdin), tc.args...)
			var localOut []byte
			if tc.name == "workspace and out" {
				var err error
				localOut, err = os.ReadFile(filepath.Join(dir, "outdir", "out", "a.txt"))
				require.NoError(t, err)
				os.RemoveAll(filepath.Join(dir, "outdir"))
			}
			_, before := residentRuns(t, env)
			remote := wasmpyIn(t, env, dir, strings.NewReader(tc.stdin), tc.args...)
			_, after := residentRuns(t, env)
			if tc.name != "no script" { // a usage error never reaches the resident
				require.Equal(t, before+1, after, "the resident ran it")
				served++
			}
			local.Stdout, remote.Stdout = normalize(local.Stdout), normalize(remote.Stdout)
			require.Equal(t, local, remote)
			if localOut != nil {
				b, err := os.ReadFile(filepath.Join(dir, "outdir", "out", "a.txt"))
				require.NoError(t, err)
				require.Equal(t, localOut, b)
			}
		})
	}
	require.NotZero(t, served)
}

// Ctrl-C and SIGTERM reach the script as they do in-process: the first
// SIGINT raises KeyboardInterrupt, SIGTERM stops the run with 143.
func TestResidentForwardsSignals(t *testing.T) {
	env, _ := residentEnv(t)
	startTestResident(t, env)
	code := "import time, sys\ntry:\n    print('ready', flush=True)\n    time.sleep(120)\nexcept KeyboardInterrupt:\n    print('caught')\n    sys.exit(5)\n"
	for _, tc := range []struct {
		sig    syscall.Signal
		status int
		out    string
	}{{syscall.SIGINT, 5, "ready\ncaught\n"}, {syscall.SIGTERM, console.ExitSIGTERM, "ready\n"}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			_, before := residentRuns(t, env)
			cmd := exec.Command(wasmpyBinary(t), "exec", "-c", code)
			cmd.Env = env
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { cmd.Process.Kill() })
			r := bufio.NewReader(stdout)
			line, err := r.ReadString('\n')
			if err != nil { // stderr is read only then: its writer runs until Wait
				cmd.Wait()
				t.Fatalf("%v: stderr: %s", err, stderr.String())
			}
			require.Equal(t, "ready\n", line)
			require.NoError(t, cmd.Process.Signal(tc.sig))
			rest, _ := io.ReadAll(r)
			err = cmd.Wait()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit)
			require.Equal(t, tc.status, exit.ExitCode(), "stderr: %s", stderr.String())
			require.Equal(t, tc.out, line+string(rest))
			_, after := residentRuns(t, env)
			require.Equal(t, before+1, after, "the resident ran it")
		})
	}
}

// A client killed mid-run (no chance to forward anything) stops its run in
// the resident: the resident sees the connection close.
func TestResidentClientKilled(t *testing.T) {
	env, _ := residentEnv(t)
	startTestResident(t, env)
	cmd := exec.Command(wasmpyBinary(t), "exec", "-c", "import time\nprint('ready', flush=True)\ntime.sleep(600)")
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	require.NoError(t, cmd.Process.Kill())
	cmd.Wait()
	// The run ends; its count goes up only once it has.
	for deadline := time.Now().Add(waitLimit); ; {
		if _, runs := residentRuns(t, env); runs == 1 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the run goes on without its client")
		time.Sleep(20 * time.Millisecond)
	}
}

// With nobody reading its stdout any more, wasmpy dies of SIGPIPE, through
// the resident as in its own process.
func TestResidentBrokenPipe(t *testing.T) {
	env, _ := residentEnv(t)
	startTestResident(t, env)
	for _, mode := range []string{"WASMPY_RESIDENT=0", "WASMPY_RESIDENT=1"} {
		cmd := exec.Command(wasmpyBinary(t), "exec", "-c", "while True: print('x' * 100)")
		cmd.Env = append(env, mode)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		_, err = bufio.NewReader(stdout).ReadString('\n')
		require.NoError(t, err)
		stdout.Close()
		err = cmd.Wait()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, mode)
		ws := exit.Sys().(syscall.WaitStatus)
		require.True(t, ws.Signaled(), "%s: %v", mode, err)
		require.Equal(t, syscall.SIGPIPE, ws.Signal(), mode)
	}
	_, runs := residentRuns(t, env)
	require.Equal(t, 1, runs)
}

// The resident exits after its idle time without a run, never during one,
// and takes its socket with it.
func TestResidentIdleExit(t *testing.T) {
	env, rt := residentEnv(t)
	// The idle time is long enough for the run below to reach the resident
	// after `resident start` returns, which takes two process starts.
	const idle = 2 * time.Second
	pid := startTestResident(t, env, "--idle", idle.String())
	// A run that waits on its stdin keeps it busy past its idle time.
	cmd := exec.Command(wasmpyBinary(t), "exec", "-c", "print(input())")
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	var out bytes.Buffer
	cmd.Stdout = &out
	require.NoError(t, cmd.Start())
	time.Sleep(2 * idle)
	// Still there, so busy: with our run (had it missed the resident, this
	// process would be gone, the run in exec's own).
	require.NoError(t, syscall.Kill(pid, 0), "busy, it is still there")
	io.WriteString(stdin, "done\n")
	stdin.Close()
	require.NoError(t, cmd.Wait())
	require.Equal(t, "done\n", out.String())
	for deadline := time.Now().Add(waitLimit); syscall.Kill(pid, 0) == nil; {
		require.True(t, time.Now().Before(deadline), "the resident never idled out")
		time.Sleep(20 * time.Millisecond)
	}
	socks, _ := filepath.Glob(filepath.Join(rt, "wasmpy", "*.sock"))
	require.Empty(t, socks)
}

// A resident of another build of the binary (same path, rebuilt) does not
// serve the new one: the client runs in-process, the old resident exits and
// the client starts one of its own build.
func TestResidentStaleBinary(t *testing.T) {
	env, _ := residentEnv(t)
	bin := filepath.Join(t.TempDir(), "wasmpy")
	copyFile := func() {
		b, err := os.ReadFile(wasmpyBinary(t))
		require.NoError(t, err)
		tmp := bin + ".new"
		require.NoError(t, os.WriteFile(tmp, b, 0o755))
		require.NoError(t, os.Rename(tmp, bin)) // a new inode, as an install makes
	}
	copyFile()
	start := exec.Command(bin, "resident", "start")
	start.Env = env
	out, err := start.CombinedOutput()
	require.NoError(t, err, "%s", out)
	old := residentPID(bin, env)
	require.NotZero(t, old)
	copyFile()
	cmd := exec.Command(bin, "exec", "-c", "print('still runs')")
	cmd.Env = env
	got, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", got)
	require.Equal(t, "still runs\n", string(got))
	for deadline := time.Now().Add(waitLimit); syscall.Kill(old, 0) == nil; {
		require.True(t, time.Now().Before(deadline), "the stale resident stays")
		time.Sleep(20 * time.Millisecond)
	}
	var pid int
	for deadline := time.Now().Add(waitLimit); pid == 0; pid = residentPID(bin, env) {
		require.True(t, time.Now().Before(deadline), "no new resident started")
		time.Sleep(20 * time.Millisecond)
	}
	require.NotEqual(t, old, pid)
	t.Cleanup(func() { stopResident(bin, env) })
}

// The socket's directory is the user's alone; one that others may enter
// is refused, and the run happens in-process.
func TestResidentSocketPermissions(t *testing.T) {
	env, rt := residentEnv(t)
	startTestResident(t, env)
	fi, err := os.Stat(filepath.Join(rt, "wasmpy"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	socks, _ := filepath.Glob(filepath.Join(rt, "wasmpy", "*.sock"))
	require.Len(t, socks, 1)
	fi, err = os.Stat(socks[0])
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	open := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(open, "wasmpy"), 0o755))
	require.NoError(t, os.Chmod(filepath.Join(open, "wasmpy"), 0o755))
	t.Setenv("XDG_RUNTIME_DIR", open)
	_, err = resident.Dir()
	require.ErrorContains(t, err, "want 0700")
	openEnv := append(env, "XDG_RUNTIME_DIR="+open)
	res := wasmpyIn(t, openEnv, "", nil, "exec", "-c", "print(1)")
	require.Equal(t, outcome{"1\n", "", 0}, res)
	entries, err := os.ReadDir(filepath.Join(open, "wasmpy"))
	require.NoError(t, err)
	require.Empty(t, entries, "no resident starts there")
}

// The configuration the client sends is the one it would load itself.
func TestResidentWireConfig(t *testing.T) {
	var cfgs []resident.Config
	app := newApp(strings.NewReader(""), io.Discard, io.Discard)
	app.Commands = []*cli.Command{{Name: "exec", Flags: execCommand().Flags, Action: func(c *cli.Context) error {
		cfg, err := sandboxConfig(c)
		require.NoError(t, err)
		w := resident.ConfigOf(cfg)
		b, err := json.Marshal(w)
		require.NoError(t, err)
		var back resident.Config
		require.NoError(t, json.Unmarshal(b, &back))
		require.Equal(t, cfg, back.Sandbox())
		cfgs = append(cfgs, w)
		return nil
	}}}
	ws := t.TempDir()
	require.NoError(t, app.Run([]string{"wasmpy", "exec", "--workspace", ws, "--allow-import", "json,re", "--packages", "a.zip",
		"--preload", "json", "--llm-base-url", "http://x/v1", "--llm-model", "m", "--llm-api-key", "k", "--llm-timeout", "7s",
		"--llm-max-calls", "3", "--llm-max-tokens", "9"}))
	require.NoError(t, app.Run([]string{"wasmpy", "exec"}))
	require.Len(t, cfgs, 2)
	require.NotEqual(t, cfgs[0], cfgs[1])
}

// Bad input to the resident commands is a usage error; status and stop say
// when none runs.
func TestResidentCommandsBadInput(t *testing.T) {
	dir, err := os.MkdirTemp("", "wr")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	t.Setenv("XDG_RUNTIME_DIR", dir)
	for _, args := range [][]string{{"resident", "start", "--idle", "0"}, {"resident", "run", "--idle", "-1s"}} {
		code, out, errOut := wasmpyCLI(t, "", args...)
		require.Equal(t, exitUsage, code, args)
		require.Empty(t, out)
		require.Equal(t, "wasmpy: --idle "+map[string]string{"0": "0s", "-1s": "-1s"}[args[3]]+": want a positive duration such as 30s or 15m\n", errOut)
	}
	code, _, errOut := wasmpyCLI(t, "", "resident", "status")
	require.Equal(t, 1, code)
	require.Equal(t, "wasmpy: no resident is running\n", errOut)
	code, _, errOut = wasmpyCLI(t, "", "resident", "stop")
	require.Equal(t, 0, code)
	require.Empty(t, errOut)
}

// Runs through the resident are as isolated as in-process ones: nothing one
// leaves (module state, builtins, files in /tmp or the workspace) is seen
// by the next; and runs arriving together each get their own instance.
func TestResidentIsolatesRuns(t *testing.T) {
	env, _ := residentEnv(t)
	startTestResident(t, env)
	leave := "import builtins, json\nbuiltins.leak = 1\njson.leak = 2\nopen('/tmp/left', 'w').write('x')\nwrite_file('left.txt', 'x')\nprint('left')"
	look := "import builtins, json, os\nprint(hasattr(builtins, 'leak'), hasattr(json, 'leak'), os.path.exists('/tmp/left'), os.path.exists('left.txt'))"
	require.Equal(t, outcome{"left\n", "", 0}, wasmpyIn(t, env, "", nil, "exec", "-c", leave))
	require.Equal(t, outcome{"False False False False\n", "", 0}, wasmpyIn(t, env, "", nil, "exec", "-c", look))

	const n = 6
	outs := make(chan outcome, n)
	for i := range n {
		go func() {
			cmd := exec.Command(wasmpyBinary(t), "exec", "-c", "import sys; print(sys.argv[1])", strconv.Itoa(i))
			cmd.Env = env
			out, err := cmd.Output()
			code := 0
			if err != nil {
				code = -1
			}
			outs <- outcome{Stdout: string(out), Code: code}
		}()
	}
	seen := map[string]bool{}
	for range n {
		o := <-outs
		require.Zero(t, o.Code)
		seen[o.Stdout] = true
	}
	require.Len(t, seen, n)
	_, runs := residentRuns(t, env)
	require.Equal(t, n+2, runs)
}

// On a terminal, through the resident: input() reads the line typed, and
// Ctrl-C (SIGINT to exec, the terminal's foreground) raises
// KeyboardInterrupt in the script.
func TestResidentTerminal(t *testing.T) {
	env, rt := residentEnv(t)
	startTestResident(t, env)
	t.Setenv("XDG_RUNTIME_DIR", rt) // startSession's wasmpy inherits it
	s := startSession(t, "exec", "-c", "name = input('name? ')\nprint('hello', name)")
	s.expect("name? ")
	s.send("Ada\r")
	s.expect("hello Ada")
	require.Equal(t, 0, s.exit())

	s = startSession(t, "exec", "-c", "import time\nprint('ready', flush=True)\ntime.sleep(600)")
	s.expect("ready")
	s.send("\x03")
	s.expect("time.sleep(600)")
	s.expect("KeyboardInterrupt")
	require.Equal(t, console.ExitSIGINT, s.exit())
	_, runs := residentRuns(t, env)
	require.Equal(t, 2, runs, "the resident ran both")
}

// A frame whose header announces more than a request may hold is refused
// on its header, before anything is allocated or read for it: the client
// gets a reply saying so, and the resident serves on.
func TestResidentRefusesLargeFrame(t *testing.T) {
	env, rt := residentEnv(t)
	pid := startTestResident(t, env)
	socket, _ := resident.Paths(filepath.Join(rt, "wasmpy"), wasmpyBinary(t))
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: socket, Net: "unix"})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write(binary.BigEndian.AppendUint32(nil, resident.MaxRequest+1)) // and no body
	require.NoError(t, err)
	var head [4]byte
	_, err = io.ReadFull(c, head[:])
	require.NoError(t, err, "no reply: the resident waited for the body it announced")
	body := make([]byte, binary.BigEndian.Uint32(head[:]))
	_, err = io.ReadFull(c, body)
	require.NoError(t, err)
	var rep resident.Reply
	require.NoError(t, json.Unmarshal(body, &rep))
	require.Equal(t, fmt.Sprintf("resident: message too large: %d bytes announced, the limit is %d", resident.MaxRequest+1, resident.MaxRequest), rep.Fallback)

	now, _ := residentRuns(t, env)
	require.Equal(t, pid, now, "the resident serves on")
	res := wasmpyIn(t, env, "", nil, "exec", "-c", "print(1)")
	require.Equal(t, outcome{"1\n", "", 0}, res)
}
