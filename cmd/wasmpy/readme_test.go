package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// readme is the repository's README.md.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	return string(b)
}

// Every code fence the README opens, it closes, and no heading is inside
// one (a fence left open at "### Provenance" rendered the provenance
// section and the skill service's as code).
func TestREADMEFencesClose(t *testing.T) {
	open := 0 // the line of the fence open, 0 when none
	for i, line := range strings.Split(readme(t), "\n") {
		switch {
		case strings.HasPrefix(line, "```") && open == 0:
			open = i + 1
		case strings.TrimSpace(line) == "```" && open != 0:
			open = 0
		case open != 0 && regexp.MustCompile(`^#{2,} [A-Z]`).MatchString(line):
			t.Fatalf("README.md:%d: heading %q inside the code fence opened at line %d", i+1, line, open)
		}
	}
	require.Zero(t, open, "README.md: the code fence opened at line %d is never closed", open)
}

// The README's quick start runs literally, top to bottom, from the
// repository's root (here: a directory with bin/wasmpy and examples/), in
// a shell on a terminal, every command succeeding; the last one starts the
// REPL, which Ctrl-D ends.
func TestREADMEQuickStart(t *testing.T) {
	m := regexp.MustCompile("(?s)\n## Quick start\n.*?```sh\n(.*?)```\n").FindStringSubmatch(readme(t))
	require.NotNil(t, m, "the quick start's sh block")
	block := m[1]

	root := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(root, "bin"), 0o755))
	require.NoError(t, os.Symlink(wasmpyBinary(t), filepath.Join(root, "bin", "wasmpy")))
	examples, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	require.NoError(t, err)
	require.NoError(t, os.Symlink(examples, filepath.Join(root, "examples")))

	env, _ := residentEnv(t)
	master, tty := openPTY(t)
	cmd := exec.Command("bash", "-e", "-c", block)
	cmd.Dir, cmd.Env = root, env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	require.NoError(t, cmd.Start())
	tty.Close()
	s := &session{t: t, cmd: cmd, pty: master, done: make(chan struct{})}
	s.watch()

	s.expect("Hello from Python 3.13")
	s.expect("42\r\n")
	s.expect("1\r\n")
	out := s.expect("}\r\n") // --json: one object
	require.Contains(t, out, `"output": {`)
	require.Contains(t, out, `"arg1"`)
	s.expect("2 4 22\r\n")                   // wc of data.txt
	s.expect("workspace: ['notes.txt']\r\n") // --workspace
	s.expect(`"files":["notes.txt"]`)        // its submit_result, after the run
	s.expect("no submit_result here: capability \"submit_result\" is not granted to this run")
	s.expect(">>> ")
	s.send("print('in the REPL')\r")
	s.expect("in the REPL")
	s.expect(">>> ")
	s.send("\x04")
	require.Equal(t, 0, s.exit(), "every command of the quick start succeeded:\n%s", s.rest())
	report, err := os.ReadFile(filepath.Join(root, "results", "report.txt"))
	require.NoError(t, err, "--out results")
	require.Equal(t, "1 files: notes.txt\n", string(report))
}
