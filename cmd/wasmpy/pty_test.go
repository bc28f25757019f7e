package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
)

// These tests run the wasmpy binary on a real pseudo-terminal, as a user
// at a shell does, and type into it.

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// wasmpyBinary builds the CLI once per test process.
func wasmpyBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "wasmpy-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "wasmpy")
		args := []string{"build", "-o", binPath}
		if slices.Contains(wasmpy.Engines(), "wasmtime") { // the engines this test binary has
			args = append(args, "-tags", "wasmtime")
		}
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	require.NoError(t, binErr)
	return binPath
}

// session is wasmpy running on a terminal.
type session struct {
	t    *testing.T
	cmd  *exec.Cmd
	pty  *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	seen int // how much of out expect has consumed
	done chan struct{}
	err  error
}

// waitLimit bounds every wait: a test that gets here has failed (hung).
const waitLimit = 90 * time.Second

func startSession(t *testing.T, args ...string) *session {
	t.Helper()
	master, tty := openPTY(t)
	cmd := exec.Command(wasmpyBinary(t), args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	require.NoError(t, cmd.Start())
	tty.Close()
	s := &session{t: t, cmd: cmd, pty: master, done: make(chan struct{})}
	s.watch()
	return s
}

// watch collects what the terminal shows and waits for the process, which
// is killed when the test ends.
func (s *session) watch() {
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := s.pty.Read(buf)
			s.mu.Lock()
			s.out.Write(buf[:n])
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	s.t.Cleanup(func() {
		s.cmd.Process.Kill()
		<-s.done
		s.pty.Close()
	})
}

// expect waits until the terminal shows want (after what earlier expects
// consumed) and returns everything up to it.
func (s *session) expect(want string) string {
	s.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		s.mu.Lock()
		text := s.out.String()[s.seen:]
		if i := strings.Index(text, want); i >= 0 {
			s.seen += i + len(want)
			s.mu.Unlock()
			return text[:i+len(want)]
		}
		s.mu.Unlock()
		select {
		case <-s.done:
			time.Sleep(50 * time.Millisecond) // the last output may still be in the pty
			s.mu.Lock()
			text = s.out.String()[s.seen:]
			s.mu.Unlock()
			if strings.Contains(text, want) {
				continue
			}
			s.t.Fatalf("wasmpy ended (%v) without showing %q; it showed:\n%s", s.err, want, text)
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("wasmpy did not show %q; it showed:\n%s", want, text)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *session) send(text string) {
	s.t.Helper()
	_, err := s.pty.Write([]byte(text))
	require.NoError(s.t, err)
}

// exit waits for wasmpy to end and returns its status.
func (s *session) exit() int {
	s.t.Helper()
	select {
	case <-s.done:
	case <-time.After(waitLimit):
		s.t.Fatalf("wasmpy did not exit; it showed:\n%s", s.rest())
	}
	var ee *exec.ExitError
	if errors.As(s.err, &ee) {
		return ee.ExitCode()
	}
	require.NoError(s.t, s.err)
	return 0
}

// rest is what the terminal showed after the last expect, once wasmpy has ended.
func (s *session) rest() string {
	time.Sleep(50 * time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()[s.seen:]
}

// Output streams as written: the first line shows while the script still
// waits for the line that lets it finish.
func TestTerminalStreamsInOrder(t *testing.T) {
	s := startSession(t, "exec", "-c", "import sys\nprint('out 1')\nprint('err 2', file=sys.stderr)\nprint('out 3')\ninput()\nprint('done')")
	s.expect("out 1\r\nerr 2\r\nout 3\r\n")
	s.send("go\r")
	s.expect("done")
	require.Equal(t, 0, s.exit())
}

func TestTerminalInput(t *testing.T) {
	s := startSession(t, "exec", "-c", "name = input('name? ')\nprint('hello', name)")
	s.expect("name? ")
	s.send("Ada\r")
	s.expect("hello Ada")
	require.Equal(t, 0, s.exit())
}

func TestTerminalCtrlC(t *testing.T) {
	t.Run("busy", func(t *testing.T) {
		s := startSession(t, "exec", "-c", "print('ready', flush=True)\nwhile True:\n    pass")
		s.expect("ready")
		s.send("\x03")
		tb := s.expect("KeyboardInterrupt")
		require.Contains(t, tb, "Traceback (most recent call last):")
		require.Contains(t, tb, `File "<string>", line 2, in <module>`)
		require.Equal(t, console.ExitSIGINT, s.exit())
	})
	t.Run("sleeping", func(t *testing.T) {
		s := startSession(t, "exec", "-c", "import time\nprint('ready', flush=True)\ntime.sleep(600)")
		s.expect("ready")
		s.send("\x03")
		s.expect("time.sleep(600)")
		s.expect("KeyboardInterrupt")
		require.Equal(t, console.ExitSIGINT, s.exit())
	})
	t.Run("reading", func(t *testing.T) {
		s := startSession(t, "exec", "-c", "print('ready', flush=True)\ninput()")
		s.expect("ready")
		s.send("\x03")
		s.expect("KeyboardInterrupt")
		require.Equal(t, console.ExitSIGINT, s.exit())
	})
	t.Run("twice", func(t *testing.T) {
		s := startSession(t, "exec", "-c", "print('ready', flush=True)\nwhile True:\n    try:\n        while True: pass\n    except KeyboardInterrupt:\n        print('caught', flush=True)")
		s.expect("ready")
		s.send("\x03")
		s.expect("caught")
		s.send("\x03")
		s.expect("wasmpy: stopped: a second Ctrl-C")
		require.Equal(t, console.ExitSIGINT, s.exit())
	})
}

func TestTerminalSIGTERM(t *testing.T) {
	s := startSession(t, "exec", "-c", "print('partial', flush=True)\nwhile True: pass")
	s.expect("partial")
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	s.expect("wasmpy: stopped: SIGTERM")
	require.Equal(t, console.ExitSIGTERM, s.exit())
}

// prompt waits for the line editor to show prompt, ready for a line: the
// script writes the prompt, then the editor draws it again, as its own.
func (s *session) prompt(prompt string) string {
	s.t.Helper()
	return s.expect("\r\x1b[K" + prompt)
}

func TestTerminalREPL(t *testing.T) {
	s := startSession(t)
	require.Contains(t, s.prompt(">>> "), "Type \"help\"", "the banner")
	s.send("x = 6\r")
	s.prompt(">>> ")
	s.send("def f(n):\r")
	s.prompt("... ")
	s.send("    return n * x\r")
	s.prompt("... ")
	s.send("\r")
	s.prompt(">>> ")
	s.send("f(7)\r")
	require.Contains(t, s.prompt(">>> "), "42\r\n")
	s.send("\x1b[A\x1b[D\x7f8\r") // history: Up is "f(7)"; edit it to f(8)
	require.Contains(t, s.prompt(">>> "), "48\r\n")
	s.send("1/0\r")
	require.Contains(t, s.prompt(">>> "), "ZeroDivisionError: division by zero")
	// Ctrl-C while typing: the line is dropped, the session goes on. The
	// message comes before the next prompt, on a terminal out of raw mode
	// (its newline a line start), every time.
	for range 8 {
		s.send("abc\x03")
		require.Equal(t, "\r\nKeyboardInterrupt\r\n>>> \r\x1b[K>>> ", s.prompt(">>> "))
	}
	s.send("while True: pass\r")
	s.prompt("... ")
	s.send("\r")
	time.Sleep(200 * time.Millisecond) // let it start: either way Ctrl-C ends the loop
	s.send("\x03")
	require.Contains(t, s.prompt(">>> "), "KeyboardInterrupt")
	s.send("print(x)\r")
	require.Contains(t, s.prompt(">>> "), "6\r\n")
	s.send("\x04") // Ctrl-D ends the session
	require.Equal(t, 0, s.exit())
}

func TestTerminalInteractiveAfterScript(t *testing.T) {
	script := writeScript(t, "s.py", "import sys\ngreeting = 'hi ' + sys.argv[1]\n")
	s := startSession(t, "exec", "-i", script, "there")
	s.prompt(">>> ")
	s.send("print(greeting)\r")
	require.Contains(t, s.prompt(">>> "), "hi there\r\n")
	s.send("exit(3)\r")
	require.Equal(t, 3, s.exit())
}

func TestTerminalModule(t *testing.T) {
	s := startSession(t, "exec", "-m", "json.tool", "--sort-keys")
	s.send(`{"b": 1, "a": 2}` + "\r\x04")
	s.expect(`"a": 2,`)
	require.Equal(t, 0, s.exit())
}

func TestTerminalTraceback(t *testing.T) {
	script := writeScript(t, "tb.py", "def inner(d):\n    return d['key'] + 1\n\ndef outer():\n    return inner({'key': None})\n\nouter()\n")
	s := startSession(t, "exec", script)
	s.expect("Traceback (most recent call last):\r\n")
	script = "/app/tb.py" // the script as the guest sees it, beside its directory's modules
	want := fmt.Sprintf("  File %q, line 7, in <module>\r\n    outer()\r\n    ~~~~~^^\r\n"+
		"  File %q, line 5, in outer\r\n    return inner({'key': None})\r\n"+
		"  File %q, line 2, in inner\r\n    return d['key'] + 1\r\n           ~~~~~~~~~^~~\r\n"+
		"TypeError: unsupported operand type(s) for +: 'NoneType' and 'int'\r\n", script, script, script)
	got := s.expect("'int'\r\n")
	require.Equal(t, want, got)
	require.NotContains(t, s.rest(), "<wasmpy")
	require.Equal(t, 1, s.exit())
}
