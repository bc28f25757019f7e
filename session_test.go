package wasmpy_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/hostfuncs"
)

var files = []wasmpy.Capability{"read_file", "write_file", "list_files"}

// newSession opens a session on sb, or skips when its interpreter cannot
// keep one.
func newSession(t testing.TB, sb *wasmpy.Sandbox) *wasmpy.Session {
	t.Helper()
	if sb.Interpreter().Kind != "core" {
		t.Skip("sessions need the core interpreter build")
	}
	sess, err := sb.NewSession(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { sess.Close() })
	return sess
}

// turn runs code as the session's next turn and fails the test unless it
// succeeds.
func turn(t testing.TB, sess *wasmpy.Session, code string) *wasmpy.Result {
	t.Helper()
	res := turnOf(t, sess, wasmpy.Job{Code: code, Grants: files})
	require.NoError(t, res.Err(), "stderr: %s", res.Stderr)
	return res
}

func turnOf(t testing.TB, sess *wasmpy.Session, job wasmpy.Job) *wasmpy.Result {
	t.Helper()
	res, err := sess.Run(context.Background(), job)
	require.NoError(t, err)
	require.NotNil(t, res.Session)
	require.Equal(t, sess.ID(), res.Session.ID)
	return res
}

// setup is a turn that leaves one of everything a session keeps.
const setup = `
import fractions, sys
x = 41
def f(): return x + 1
class C:
    def __init__(self): self.v = fractions.Fraction(1, 3)
obj = C()
sys.modules['fractions'].__dict__['marker'] = 'kept'
write_file('notes/a.txt', 'from turn 1')
with open('/workspace/b.txt', 'w') as fh:
    fh.write('opened and written')
with open('/tmp/scratch', 'w') as fh:
    fh.write('tmp too')
`

// check is a turn that reads all of it back.
const check = `
import fractions
print(x, f(), type(obj).__name__, obj.v, fractions.marker)
print(read_file('notes/a.txt'), open('b.txt').read(), open('/tmp/scratch').read())
`

const checked = "41 42 C 1/3 kept\nfrom turn 1 opened and written tmp too\n"

func TestSessionKeepsState(t *testing.T) {
	sess := newSession(t, testSandbox(t))
	first := turn(t, sess, setup)
	require.Equal(t, 1, first.Session.Turn)
	require.True(t, first.Session.Kept)
	require.NotEqual(t, first.Session.StateBefore, first.Session.StateAfter)
	res := turn(t, sess, check)
	require.Equal(t, checked, res.Stdout)
	require.Equal(t, 2, res.Session.Turn)
	require.Equal(t, first.Session.StateAfter, res.Session.StateBefore)
	// The overlay is the session's: Files lists what earlier turns wrote.
	var paths []string
	for _, f := range res.Files {
		paths = append(paths, f.Path)
	}
	require.Equal(t, []string{"b.txt", "notes/a.txt"}, paths)
	got, ok := res.File("notes/a.txt")
	require.True(t, ok)
	require.Equal(t, "from turn 1", string(got))

	// Many turns on: state keeps building on itself.
	for range 20 {
		turn(t, sess, "x += 1\nhistory = globals().get('history', []) + [x]")
	}
	require.Equal(t, "61 [42, 61]\n", turn(t, sess, "print(x, [history[0], history[-1]])").Stdout)
	info, err := sess.Info()
	require.NoError(t, err)
	require.Equal(t, 23, info.Turns)
	require.Positive(t, info.StateBytes)
}

// One session's state is never visible from another, nor from a plain run.
func TestSessionIsolation(t *testing.T) {
	sb := testSandbox(t)
	a, b := newSession(t, sb), newSession(t, sb)
	turn(t, a, "secret = 'a-only'\nimport json\njson.secret = 1\nwrite_file('secret.txt', 'a')")
	probe := `
import json, os
print(globals().get('secret'), hasattr(json, 'secret'), os.path.exists('/workspace/secret.txt'))
`
	const none = "None False False\n"
	require.Equal(t, none, turn(t, b, probe).Stdout)
	res := run(t, wasmpy.Job{Code: probe})
	require.Equal(t, none, res.Stdout)
	require.Equal(t, "a-only True True\n", turn(t, a, probe).Stdout)
	// A grant of an earlier turn does not outlive it.
	res = turnOf(t, a, wasmpy.Job{Code: "write_file('x.txt', 'no')"})
	require.Equal(t, wasmpy.KindException, res.Error.Kind)
	require.Equal(t, "PermissionError", res.Error.Type)
}

// TestSessionDetachFiles: a turn with DetachFiles leaves its workspace
// files to the caller (Files, File, Removed) and the session keeps none,
// so the next turn reads the stable directory as the caller left it; /tmp
// stays in the session.
func TestSessionDetachFiles(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "old.txt"), []byte("old"), 0o644))
	sess := newSession(t, testSandbox(t))
	res := turnOf(t, sess, wasmpy.Job{Workspace: dir, DetachFiles: true,
		Code: "import os\nos.remove('old.txt')\nopen('new.txt', 'w').write('new')\nopen('/tmp/t', 'w').write('t')"})
	require.NoError(t, res.Err(), res.Stderr)
	require.Equal(t, []string{"old.txt"}, res.Removed())
	require.Len(t, res.Files, 1)
	data, ok := res.File("new.txt")
	require.True(t, ok)
	require.Equal(t, "new", string(data))

	// The caller did not carry the turn's work over: the next turn sees the
	// directory as it is.
	res = turnOf(t, sess, wasmpy.Job{Workspace: dir, DetachFiles: true, Code: "import os\nprint(sorted(os.listdir('.')), open('/tmp/t').read())"})
	require.NoError(t, res.Err(), res.Stderr)
	require.Equal(t, "['old.txt'] t\n", res.Stdout)
	require.Empty(t, res.Files)
	require.Empty(t, res.Removed())

	// Without it the session keeps its overlay over the directory.
	turnOf(t, sess, wasmpy.Job{Workspace: dir, Code: "import os\nos.remove('old.txt')"})
	res = turnOf(t, sess, wasmpy.Job{Workspace: dir, Code: "import os\nprint(os.listdir('.'))"})
	require.Equal(t, "[]\n", res.Stdout)
	require.Equal(t, []string{"old.txt"}, res.Removed())
}

func TestSessionFork(t *testing.T) {
	sb := testSandbox(t)
	parent := newSession(t, sb)
	turn(t, parent, "x = 1\nwrite_file('f.txt', 'parent')")
	child, err := parent.Fork()
	require.NoError(t, err)
	defer child.Close()
	require.NotEqual(t, parent.ID(), child.ID())
	turn(t, parent, "x = 'parent'\nwrite_file('f.txt', 'parent 2')")
	turn(t, child, "x = x + 100\nwrite_file('f.txt', 'child')\nwrite_file('only-child.txt', '')")
	require.Equal(t, "parent parent 2 False\n", turn(t, parent, "import os\nprint(x, read_file('f.txt'), os.path.exists('only-child.txt'))").Stdout)
	res := turn(t, child, "print(x, read_file('f.txt'))")
	require.Equal(t, "101 child\n", res.Stdout)
	require.Equal(t, 3, res.Session.Turn, "a fork counts on from its parent's turns")
}

// A turn that fails leaves the session consistent: at the state the turn
// left when its code ended by itself (an exception, sys.exit), else at
// the state before it.
func TestSessionFailedTurns(t *testing.T) {
	sess := newSession(t, testSandbox(t))
	turn(t, sess, "x = 1\nwrite_file('f.txt', 'before')")
	for _, c := range []struct {
		name   string
		code   string
		limits wasmpy.Limits
		kind   wasmpy.Kind
		kept   bool
	}{
		{"exception", "x = 2\nwrite_file('f.txt', 'exception')\n1/0", wasmpy.Limits{}, wasmpy.KindException, true},
		{"syntax", "x = (", wasmpy.Limits{}, wasmpy.KindSyntax, true},
		{"exit", "x = 3\nimport sys; sys.exit(4)", wasmpy.Limits{}, wasmpy.KindExit, true},
		{"timeout", "x = 'timeout'\nwrite_file('f.txt', 'timeout')\nwhile True: pass", wasmpy.Limits{Timeout: 200 * time.Millisecond}, wasmpy.KindTimeout, false},
		{"fuel", "x = 'fuel'\nwhile True: pass", wasmpy.Limits{Fuel: 1 << 20}, wasmpy.KindFuel, false},
		{"memory", "x = 'memory'\nb = bytearray(200 << 20)", wasmpy.Limits{Memory: 96 << 20}, wasmpy.KindMemory, false},
		{"output", "x = 'output'\nprint('y' * 5000)", wasmpy.Limits{Output: 1000}, wasmpy.KindOutput, false},
		{"os._exit", "x = 'os._exit'\nimport os; os._exit(3)", wasmpy.Limits{}, wasmpy.KindExit, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, err := sess.Info()
			require.NoError(t, err)
			res := turnOf(t, sess, wasmpy.Job{Code: c.code, Limits: c.limits, Grants: files})
			require.NotNil(t, res.Error)
			require.Equal(t, c.kind, res.Error.Kind, res.Error.Message)
			require.Equal(t, c.kept, res.Session.Kept)
			require.Equal(t, before.StateHash, res.Session.StateBefore)
			if !c.kept {
				require.Equal(t, before.StateHash, res.Session.StateAfter)
			}
			// Whatever happened, the session runs on, without a trace of
			// a turn it did not keep.
			after := turn(t, sess, "print(x, read_file('f.txt'))")
			if !c.kept {
				require.NotContains(t, after.Stdout, c.name)
			}
		})
	}
	require.Equal(t, "3 exception\n", turn(t, sess, "print(x, read_file('f.txt'))").Stdout)
}

func TestSessionSaveRestore(t *testing.T) {
	sb := testSandbox(t)
	sess := newSession(t, sb)
	turn(t, sess, setup)
	var saved bytes.Buffer
	require.NoError(t, sess.Save(&saved))
	info, err := sess.Info()
	require.NoError(t, err)
	require.Less(t, saved.Len(), int(info.StateBytes), "the saved form is compressed")

	// Restoring into the sandbox that holds it would duplicate its id.
	_, err = sb.RestoreSession(context.Background(), bytes.NewReader(saved.Bytes()))
	require.ErrorContains(t, err, "already open")

	// Another sandbox of the same interpreter takes it up.
	other, err := wasmpy.New(context.Background(), wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER")})
	require.NoError(t, err)
	defer other.Close(context.Background())
	restored, err := other.RestoreSession(context.Background(), bytes.NewReader(saved.Bytes()))
	require.NoError(t, err)
	require.Equal(t, sess.ID(), restored.ID())
	rinfo, err := restored.Info()
	require.NoError(t, err)
	require.Equal(t, info.StateHash, rinfo.StateHash)
	res := turn(t, restored, check)
	require.Equal(t, checked, res.Stdout)
	require.Equal(t, 2, res.Session.Turn)
	require.Equal(t, info.StateHash, res.Session.StateBefore)
}

// TestSessionDelta: a copy restored from a Save follows the session by
// deltas, each holding only what a turn changed, and ends at the same
// state; a delta that does not fit the copy, or is damaged, is refused with
// an error that says why, and the copy stays as it was.
func TestSessionDelta(t *testing.T) {
	sb := testSandbox(t)
	sess := newSession(t, sb)
	turn(t, sess, setup)
	var full bytes.Buffer
	require.NoError(t, sess.Save(&full))
	other, err := wasmpy.New(context.Background(), wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER")})
	require.NoError(t, err)
	defer other.Close(context.Background())
	cp, err := other.RestoreSession(context.Background(), bytes.NewReader(full.Bytes()))
	require.NoError(t, err)

	var deltas [][]byte
	for _, code := range []string{"x += 1", "write_file('notes/c.txt', 'turn 3')\nx += 1", "x = f()"} {
		res := turn(t, sess, code)
		var d bytes.Buffer
		require.NoError(t, sess.SaveDelta(&d, res.Session.StateBefore))
		require.Less(t, d.Len(), full.Len()/10, "a delta holds what the turn changed")
		require.NoError(t, cp.ApplyDelta(bytes.NewReader(d.Bytes())))
		deltas = append(deltas, d.Bytes())
	}
	want, err := sess.Info()
	require.NoError(t, err)
	got, err := cp.Info()
	require.NoError(t, err)
	require.Equal(t, want.StateHash, got.StateHash)
	require.Equal(t, want.Turns, got.Turns)
	res := turn(t, cp, "print(x, read_file('notes/c.txt'))")
	require.Equal(t, "44 turn 3\n", res.Stdout)
	require.Equal(t, want.StateHash, res.Session.StateBefore)

	// An empty delta: from the state the session holds.
	var empty bytes.Buffer
	require.NoError(t, sess.SaveDelta(&empty, want.StateHash))
	require.ErrorContains(t, sess.SaveDelta(&empty, "f00d"), "cannot save changes since state f00d")

	last := deltas[len(deltas)-1]
	flip := bytes.Clone(last)
	flip[len(flip)/2] ^= 1
	stale := newSession(t, sb)
	for _, c := range []struct {
		name string
		to   *wasmpy.Session
		data []byte
		want string
	}{
		{"applied twice", cp, last, "the delta applies to state"},
		{"another session's", stale, last, "a delta of session"},
		{"corrupt", cp, flip, "checksum mismatch"},
		{"truncated", cp, last[:len(last)-40], "corrupt or truncated"},
		{"empty", cp, nil, "not a wasmpy saved session"},
		{"a whole save", cp, full.Bytes(), "a whole saved session, not a delta"},
	} {
		before, err := c.to.Info()
		require.NoError(t, err)
		require.ErrorContains(t, c.to.ApplyDelta(bytes.NewReader(c.data)), c.want, c.name)
		after, err := c.to.Info()
		require.NoError(t, err)
		require.Equal(t, before.StateHash, after.StateHash, c.name)
	}
	_, err = sb.RestoreSession(context.Background(), bytes.NewReader(last))
	require.ErrorContains(t, err, "a session delta, not a saved session")
}

// The saved session crosses processes: this test's binary, run again,
// restores it, runs a turn and saves it back.
func TestSessionAcrossProcesses(t *testing.T) {
	if path := os.Getenv("WASMPY_SESSION_CHILD"); path != "" {
		sessionChild(t, path)
		return
	}
	sess := newSession(t, testSandbox(t))
	turn(t, sess, setup)
	path := filepath.Join(t.TempDir(), "s.wasmpy-session")
	var saved bytes.Buffer
	require.NoError(t, sess.Save(&saved))
	require.NoError(t, os.WriteFile(path, saved.Bytes(), 0o600))

	cmd := exec.Command(os.Args[0], "-test.run=^TestSessionAcrossProcesses$", "-test.count=1")
	cmd.Env = append(os.Environ(), "WASMPY_SESSION_CHILD="+path)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	other, err := wasmpy.New(context.Background(), wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER")})
	require.NoError(t, err)
	defer other.Close(context.Background())
	back, err := other.RestoreSession(context.Background(), bytes.NewReader(b))
	require.NoError(t, err)
	res := turn(t, back, "print(x, from_child, read_file('child.txt'))")
	require.Equal(t, "41 43 child wrote\n", res.Stdout)
	require.Equal(t, 3, res.Session.Turn)
}

func sessionChild(t *testing.T, path string) {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	sess, err := testSandbox(t).RestoreSession(context.Background(), bytes.NewReader(b))
	require.NoError(t, err)
	res := turn(t, sess, check+"from_child = f() + 1\nwrite_file('child.txt', 'child wrote')")
	require.Equal(t, checked, res.Stdout)
	var out bytes.Buffer
	require.NoError(t, sess.Save(&out))
	require.NoError(t, os.WriteFile(path, out.Bytes(), 0o600))
}

// A saved session that is not one, is damaged, or was made with another
// interpreter is refused with an error that says which; nothing runs.
func TestSessionRestoreRefuses(t *testing.T) {
	sb := testSandbox(t)
	sess := newSession(t, sb)
	turn(t, sess, "x = 1")
	var buf bytes.Buffer
	require.NoError(t, sess.Save(&buf))
	good := buf.Bytes()
	require.NoError(t, sess.Close())

	// reseal rewrites the header with edit and fixes the checksum, as a
	// forger (or another wasmpy) would.
	reseal := func(edit func(h map[string]any)) []byte {
		n := len("wasmpy-session\n") + 1
		hl := binary.LittleEndian.Uint32(good[n:])
		var h map[string]any
		require.NoError(t, json.Unmarshal(good[n+4:n+4+int(hl)], &h))
		edit(h)
		hj, _ := json.Marshal(h)
		b := append(bytes.Clone(good[:n]), binary.LittleEndian.AppendUint32(nil, uint32(len(hj)))...)
		b = append(append(b, hj...), good[n+4+int(hl):len(good)-sha256.Size]...)
		sum := sha256.Sum256(b)
		return append(b, sum[:]...)
	}
	flip := bytes.Clone(good)
	flip[len(flip)/2] ^= 1
	version := bytes.Clone(good)
	version[len("wasmpy-session\n")] = 9
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "not a wasmpy saved session"},
		{"foreign", []byte("PK\x03\x04 a zip file, say"), "not a wasmpy saved session"},
		{"truncated", good[:len(good)-100], "checksum mismatch"},
		{"corrupt", flip, "checksum mismatch"},
		{"version", version, "version 9"},
		{"other interpreter", reseal(func(h map[string]any) {
			h["interpreter"].(map[string]any)["sha256"] = strings.Repeat("ab", 32)
		}), "made with another interpreter"},
		{"other packages", reseal(func(h map[string]any) { h["image_key"] = strings.Repeat("cd", 32) }), "package sets"},
		{"forged state", reseal(func(h map[string]any) { h["state_hash"] = strings.Repeat("00", 32) }), "does not match its hash"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := sb.RestoreSession(context.Background(), bytes.NewReader(c.data))
			require.ErrorContains(t, err, c.want)
			require.Nil(t, s)
			require.NotContains(t, err.Error(), "\n")
		})
	}
	_, err := sb.RestoreSession(context.Background(), bytes.NewReader(reseal(func(map[string]any) {})))
	require.NoError(t, err, "the forger's envelope itself is sound")
}

// With a session key, a saved session is sealed with HMAC-SHA256: one
// altered and re-checksummed (a plain SHA-256, all a forger without the key
// can compute), or sealed under another key, is refused; the key's holder
// restores it.
func TestSessionKey(t *testing.T) {
	ctx := context.Background()
	sandbox := func(key string) *wasmpy.Sandbox {
		sb, err := wasmpy.New(ctx, wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER"), SessionKey: []byte(key)})
		require.NoError(t, err)
		t.Cleanup(func() { sb.Close(ctx) })
		return sb
	}
	const aliceKey = "alice's key, 32 bytes long......"
	alice, alice2, bob, none := sandbox(aliceKey), sandbox(aliceKey), sandbox("bob's key, 32 bytes long........"), sandbox("")
	sess := newSession(t, alice)
	turn(t, sess, "x = 41")
	var buf bytes.Buffer
	require.NoError(t, sess.Save(&buf))
	good := bytes.Clone(buf.Bytes())

	restored, err := alice2.RestoreSession(ctx, bytes.NewReader(good)) // another process of alice's, say
	require.NoError(t, err)
	res := turn(t, restored, "print(x + 1)")
	require.Equal(t, "42\n", res.Stdout)
	require.NoError(t, restored.Close())

	// The forger's edit: a byte of the body changed, the checksum recomputed.
	forged := bytes.Clone(good[:len(good)-sha256.Size])
	forged[len(forged)-10] ^= 1
	sum := sha256.Sum256(forged)
	forged = append(forged, sum[:]...)
	_, err = alice.RestoreSession(ctx, bytes.NewReader(forged))
	require.ErrorIs(t, err, wasmpy.ErrSessionSeal)
	require.ErrorContains(t, err, "a plain checksum, not a seal under this sandbox's session key")

	_, err = bob.RestoreSession(ctx, bytes.NewReader(good))
	require.ErrorIs(t, err, wasmpy.ErrSessionSeal)
	require.ErrorContains(t, err, "sealed under another session key")
	_, err = none.RestoreSession(ctx, bytes.NewReader(good))
	require.ErrorContains(t, err, "checksum mismatch", "without a key, a sealed file is no checksummed one")

	// A delta is sealed alike.
	res = turn(t, sess, "x += 1")
	buf.Reset()
	require.NoError(t, sess.SaveDelta(&buf, res.Session.StateBefore))
	other, err := bob.RestoreSession(ctx, bytes.NewReader(reseal(t, good, "bob's key, 32 bytes long........")))
	require.NoError(t, err, "resealed under bob's key")
	defer other.Close()
	require.ErrorIs(t, other.ApplyDelta(bytes.NewReader(buf.Bytes())), wasmpy.ErrSessionSeal)
}

// reseal seals a saved session's contents under key, as its holder would.
func reseal(t *testing.T, saved []byte, key string) []byte {
	t.Helper()
	body := bytes.Clone(saved[:len(saved)-sha256.Size])
	h := hmac.New(sha256.New, []byte(key))
	h.Write(body)
	return h.Sum(body)
}

func TestSessionLimits(t *testing.T) {
	if testSandbox(t).Interpreter().Kind != "core" {
		t.Skip("sessions need the core interpreter build")
	}
	ctx := context.Background()
	sb, err := wasmpy.New(ctx, wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER"),
		Sessions:  wasmpy.SessionLimits{Max: 2, MaxStateBytes: 8 << 20, IdleTTL: time.Hour},
		HostFuncs: hostfuncs.Table{"echo": hostfuncs.Typed(func(ctx context.Context, a struct{ X int }) (int, error) { return a.X, nil })}})
	require.NoError(t, err)
	defer sb.Close(ctx)

	t.Run("grants last one turn", func(t *testing.T) {
		sess := newSession(t, sb)
		res := turnOf(t, sess, wasmpy.Job{Code: "kept = echo\nimport wasmpy\nprint(echo(x=7))", Grants: []wasmpy.Capability{"echo"}})
		require.NoError(t, res.Err())
		require.Equal(t, "7\n", res.Stdout)
		res = turnOf(t, sess, wasmpy.Job{Code: "print('echo' in dir(__builtins__), hasattr(wasmpy, 'echo'))\nkept(x=1)"})
		require.Equal(t, "False False\n", res.Stdout)
		require.Equal(t, "PermissionError", res.Error.Type)
	})

	t.Run("max sessions", func(t *testing.T) {
		a := newSession(t, sb)
		b, err := a.Fork()
		require.NoError(t, err)
		_, err = sb.NewSession(ctx)
		require.ErrorIs(t, err, wasmpy.ErrTooManySessions)
		_, err = a.Fork()
		require.ErrorIs(t, err, wasmpy.ErrTooManySessions)
		require.NoError(t, b.Close())
		c := newSession(t, sb)
		require.NoError(t, c.Close())
		st := sb.SessionStats()
		require.Equal(t, 1, st.Open)
		require.Equal(t, 2, st.Max)
		require.EqualValues(t, 2, st.Refused)
		_, err = b.Run(ctx, wasmpy.Job{Code: "pass"})
		require.ErrorIs(t, err, wasmpy.ErrSessionClosed)
	})

	t.Run("state cap", func(t *testing.T) {
		sess := newSession(t, sb)
		turn(t, sess, "x = 'small'")
		res := turnOf(t, sess, wasmpy.Job{Code: "x = 'big'\nbig = bytes(range(256)) * (64 << 10)"}) // 16 MiB
		require.NotNil(t, res.Error)
		require.Equal(t, wasmpy.KindMemory, res.Error.Kind)
		require.Contains(t, res.Error.Message, "limit of 8388608")
		require.False(t, res.Session.Kept)
		require.Equal(t, int64(8<<20), res.Session.MaxStateBytes)
		require.Equal(t, "small\n", turn(t, sess, "print(x)").Stdout)
		require.EqualValues(t, 1, sb.SessionStats().Discards)
	})
}

func TestSessionIdleTTL(t *testing.T) {
	if testSandbox(t).Interpreter().Kind != "core" {
		t.Skip("sessions need the core interpreter build")
	}
	ctx := context.Background()
	sb, err := wasmpy.New(ctx, wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER"),
		Sessions: wasmpy.SessionLimits{IdleTTL: 50 * time.Millisecond}})
	require.NoError(t, err)
	defer sb.Close(ctx)
	sess, err := sb.NewSession(ctx)
	require.NoError(t, err)
	// Wait for the expiry with a generous bound: it cannot come before
	// the TTL, and a slow machine may take long after it.
	deadline := time.Now().Add(30 * time.Second)
	for sb.SessionStats().Expired == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	_, err = sess.Run(ctx, wasmpy.Job{Code: "pass"})
	require.ErrorIs(t, err, wasmpy.ErrSessionExpired)
	_, ok := sb.Session(sess.ID())
	require.False(t, ok)
	require.Zero(t, sb.SessionStats().Open)
	require.True(t, errors.Is(sess.Save(new(bytes.Buffer)), wasmpy.ErrSessionExpired))
}

// Closing a sandbox while the instance for a session's next turn is being
// started ahead (or discarded) waits for it: the runtime must not close
// under it.
func TestSessionCloseWhileStartingAhead(t *testing.T) {
	if testSandbox(t).Interpreter().Kind != "core" {
		t.Skip("sessions need the core interpreter build")
	}
	ctx := context.Background()
	for range 3 {
		sb, err := wasmpy.New(ctx, wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER"),
			Sessions: wasmpy.SessionLimits{MaxStateBytes: 4 << 20}})
		require.NoError(t, err)
		sess, err := sb.NewSession(ctx)
		require.NoError(t, err)
		turn(t, sess, "x = 1")
		turn(t, sess, "x += 1")                                                          // starts ahead from a state
		res := turnOf(t, sess, wasmpy.Job{Code: "big = bytes(range(256)) * (32 << 10)"}) // discarded: its start ahead is forgotten
		require.False(t, res.Session.Kept)
		require.NoError(t, sb.Close(ctx))
		_, err = sess.Run(ctx, wasmpy.Job{Code: "pass"})
		require.ErrorIs(t, err, wasmpy.ErrSessionClosed)
	}
}

// An import policy binds every turn of a session, and a turn's guard does
// not keep the next turn from starting (it refused the runner's own import).
func TestSessionImportPolicy(t *testing.T) {
	ctx := context.Background()
	s := newSession(t, testSandbox(t))
	for i := range 3 {
		res, err := s.Run(ctx, wasmpy.Job{Code: "import math\nx = " + strconv.Itoa(i), AllowImports: []string{"math"}})
		require.NoError(t, err, "turn %d", i+1)
		require.Nil(t, res.Error, "turn %d", i+1)
	}
	res, err := s.Run(ctx, wasmpy.Job{Code: "import os", AllowImports: []string{"math"}})
	require.NoError(t, err)
	require.NotNil(t, res.Error)
	require.Contains(t, res.Error.Message, "import of 'os' is not allowed")
	res, err = s.Run(ctx, wasmpy.Job{Code: "import os\nprint(x)"})
	require.NoError(t, err)
	require.Nil(t, res.Error, "a turn without a policy is not held to the last one's")
	require.Equal(t, "2\n", res.Stdout)
}

// A session is engine-independent: its state is pages over the image, the
// same bytes on both engines. Saved on one engine, it resumes on the
// other, follows it there by deltas, and comes back, its state hash the
// same whichever engine ran the turn.
func TestSessionAcrossEngines(t *testing.T) {
	engines := wasmpy.Engines()
	if len(engines) < 2 {
		t.Skip("one engine in this binary (go test -tags wasmtime adds wasmtime)")
	}
	sbs := map[string]*wasmpy.Sandbox{}
	for _, name := range engines {
		sb, err := wasmpy.New(context.Background(), wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER"), Engine: name})
		require.NoError(t, err)
		defer sb.Close(context.Background())
		sbs[name] = sb
	}
	for _, pair := range [][2]string{{engines[0], engines[1]}, {engines[1], engines[0]}} {
		t.Run(pair[0]+" to "+pair[1], func(t *testing.T) {
			from, to := sbs[pair[0]], sbs[pair[1]]
			sess := newSession(t, from)
			turn(t, sess, setup)
			var full bytes.Buffer
			require.NoError(t, sess.Save(&full))
			cp, err := to.RestoreSession(context.Background(), bytes.NewReader(full.Bytes()))
			require.NoError(t, err)
			defer cp.Close()
			res := turn(t, cp, check)
			require.Equal(t, checked, res.Stdout)
			require.Equal(t, pair[1], res.Engine)
			turn(t, sess, check) // both at the same state again

			// The same deterministic turn (a fuel budget pins the clock and
			// random) on each engine leaves the same state, and uses the
			// same fuel.
			det := wasmpy.Job{Code: check + "import random, time; y = (random.random(), time.time())", Grants: files, Limits: wasmpy.Limits{Fuel: 1e9}}
			ra, rb := turnOf(t, sess, det), turnOf(t, cp, det)
			require.NoError(t, ra.Err())
			require.NoError(t, rb.Err())
			require.Equal(t, ra.Stdout, rb.Stdout)
			require.Equal(t, ra.FuelUsed, rb.FuelUsed)
			want, err := sess.Info()
			require.NoError(t, err)
			got, err := cp.Info()
			require.NoError(t, err)
			require.Equal(t, want.StateHash, got.StateHash)

			// Back by a delta: a turn on the other engine, applied here.
			res = turn(t, cp, "x += 100\nwrite_file('notes/back.txt', 'from '+str(x))")
			var d bytes.Buffer
			require.NoError(t, cp.SaveDelta(&d, res.Session.StateBefore))
			require.NoError(t, sess.ApplyDelta(bytes.NewReader(d.Bytes())))
			res = turn(t, sess, "print(x, read_file('notes/back.txt'))")
			require.Equal(t, pair[0], res.Engine)
			require.Equal(t, "141 from 141\n", res.Stdout)
		})
	}
}
