package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
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
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	sparse := filepath.Join(dir, "sparse")
	f, err := os.Create(sparse)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(1288490189)) // 1.2 GiB, nothing written: refused before a byte is read
	require.NoError(t, f.Close())
	for _, c := range []struct{ path, want string }{
		{garbage, "not a wasmpy saved session"},
		{dir, "is a directory"},
		{"", "--session: give a FILE"},
		{"/dev/zero", "wasmpy: --session /dev/zero: not a regular file (a character device)\n"},
		{fifo, "wasmpy: --session " + fifo + ": not a regular file (a FIFO)\n"}, // never waits for a writer
		{sparse, "wasmpy: --session " + sparse + ": 1.2 GiB, more than the limit of 273 MiB\n"},
	} {
		code, out, errOut := wasmpyCLI(t, "", "exec", "--session", c.path, "-c", "print('ran')")
		require.Equal(t, exitUsage, code, errOut)
		require.Empty(t, out, "nothing runs")
		require.Contains(t, errOut, c.want)
		require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
		require.Equal(t, 1, strings.Count(errOut, "wasmpy:"), errOut)
	}
	fi, err := os.Stat(sparse)
	require.NoError(t, err)
	require.EqualValues(t, 1288490189, fi.Size(), "a refused file is left alone")
	b, err := os.ReadFile(garbage)
	require.NoError(t, err)
	require.Equal(t, "not a session at all", string(b), "a file that is not a session is left alone")
}

// A saved session is sealed with the user's key (made on first use, 0600,
// in the config dir): a file altered and re-checksummed, or saved by
// another user, is refused; nothing runs.
func TestExecSessionSealed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s")
	code, _, errOut := wasmpyCLI(t, "", "exec", "--session", path, "-c", "x = 1")
	require.Equal(t, 0, code, errOut)
	key := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "wasmpy", "session.key")
	fi, err := os.Stat(key)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.EqualValues(t, 32, fi.Size())
	fi, err = os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "a session file is the user's alone")

	good, err := os.ReadFile(path)
	require.NoError(t, err)
	// What a forger who can write the file but lacks the key can do: change
	// the contents and recompute the plain SHA-256 at the end.
	forged := bytes.Clone(good[:len(good)-sha256.Size])
	forged[len(forged)-10] ^= 1
	sum := sha256.Sum256(forged)
	require.NoError(t, os.WriteFile(path, append(forged, sum[:]...), 0o600))
	code, out, errOut := wasmpyCLI(t, "", "exec", "--session", path, "-c", "print('ran')")
	require.Equal(t, exitUsage, code, errOut)
	require.Empty(t, out, "nothing runs")
	require.Contains(t, errOut, "wasmpy: --session "+path+": saved session refused: it carries a plain checksum, not a seal under this sandbox's session key")
	require.Contains(t, errOut, "your key: "+key)
	require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)

	// Another user (another config dir, another key) cannot restore it.
	require.NoError(t, os.WriteFile(path, good, 0o600))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "other-user"))
	code, _, errOut = wasmpyCLI(t, "", "exec", "--session", path, "-c", "print('ran')")
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, "sealed under another session key")

	// A key others may read is refused, not used.
	other := filepath.Join(dir, "other-user", "wasmpy", "session.key")
	require.NoError(t, os.Chmod(other, 0o644))
	code, _, errOut = wasmpyCLI(t, "", "exec", "--session", filepath.Join(dir, "new"), "-c", "pass")
	require.Equal(t, exitUsage, code, errOut)
	require.Equal(t, "wasmpy: --session: session key "+other+": mode 0644 lets others at it (want a file of 32 bytes, mode 0600, yours; delete it to make a new one, which refuses the sessions saved under this one)\n", errOut)
}

// Two turns on one session file at once: the second waits for the first
// to save, and starts from what it saved; no turn is lost.
func TestExecSessionConcurrentTurns(t *testing.T) {
	env, _ := residentEnv(t, "WASMPY_RESIDENT=0")
	path := filepath.Join(t.TempDir(), "s")
	turn := func(code string, stdin *os.File) *exec.Cmd {
		cmd := exec.Command(wasmpyBinary(t), "exec", "--session", path, "--timeout", "2m", "-c", code)
		cmd.Env = env
		if stdin != nil {
			cmd.Stdin = stdin
		}
		return cmd
	}
	out, err := turn("x = [0]", nil).CombinedOutput()
	require.NoError(t, err, "%s", out)

	// A: appends 1, then holds its turn until the test writes a line.
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	a := turn("x.append(1)\nprint('holding', flush=True)\ninput()", inR)
	aOut, err := a.StdoutPipe()
	require.NoError(t, err)
	var aErr lockedBuffer
	a.Stderr = &aErr
	require.NoError(t, a.Start())
	inR.Close()
	line, err := bufio.NewReader(aOut).ReadString('\n')
	require.NoError(t, err, "stderr: %s", aErr.String())
	require.Equal(t, "holding\n", line)

	// B, while A holds the file: it says it waits (or, unlocked, ends).
	b := turn("x.append(2)", nil)
	bErr, err := b.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, b.Start())
	var bLines []string
	var wg sync.WaitGroup
	waiting := make(chan bool, 1)
	wg.Go(func() {
		sc := bufio.NewScanner(bErr)
		said := false
		for sc.Scan() {
			bLines = append(bLines, sc.Text())
			if !said && strings.Contains(sc.Text(), "another turn holds it: waiting") {
				said = true
				waiting <- true
			}
		}
		if !said {
			waiting <- false
		}
	})
	require.True(t, <-waiting, "B did not wait for A's turn")
	inW.Write([]byte("\n"))
	inW.Close()
	require.NoError(t, a.Wait(), "A; stderr: %s", aErr.String())
	wg.Wait()
	require.NoError(t, b.Wait(), "B; stderr: %s", strings.Join(bLines, "\n"))

	out, err = turn("print(x)", nil).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "[0, 1, 2]\n", string(out), "both turns kept, in order")
}
