package wasmpy_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/packages"
)

// runWithin runs job as sess's next turn and fails the test, instead of
// hanging it, when the turn does not return within wait: a turn whose
// start ran outside its limits never returned.
func runWithin(t *testing.T, sess *wasmpy.Session, job wasmpy.Job, wait time.Duration) *wasmpy.Result {
	t.Helper()
	type ran struct {
		res *wasmpy.Result
		err error
	}
	c := make(chan ran, 1)
	go func() {
		res, err := sess.Run(context.Background(), job)
		c <- ran{res, err}
	}()
	select {
	case r := <-c:
		require.NoError(t, r.err)
		return r.res
	case <-time.After(wait):
		t.Fatalf("the turn did not return within %v: it ran outside its limits", wait)
		return nil
	}
}

// What a session's turn leaves behind runs, if at all, inside the next
// turn and under that turn's deadline, fuel and memory limit: never before
// it, outside every limit (issue 25, item 1). A rebound name in the user's
// globals does not even get to run: the runner's entry is not looked up
// there.
func TestSessionLeftoversRunUnderTheNextTurnsLimits(t *testing.T) {
	const spin = "def _spin(*a, **k):\n    while True: pass\n"
	const hog = "def _spin(*a, **k):\n    keep = []\n    while True: keep.append(bytearray(1 << 20))\n"
	cases := []struct {
		name   string
		poison string
		limits wasmpy.Limits
		kind   wasmpy.Kind // "": the next turn runs as if nothing were left
	}{
		{"a global __import__", "def __import__(*a):\n    while True: pass\n", wasmpy.Limits{Timeout: 20 * time.Second}, ""},
		{"the runner's main replaced", spin + "import sys\nsys.modules['_wasmpy_runner'].main = _spin\n", wasmpy.Limits{Timeout: 20 * time.Second}, ""},
		{"the entry rebound, deadline", spin + "import _wasmpy_runner as r\nr._entry_main.__dict__['_wasmpy_entry'] = _spin\n", wasmpy.Limits{Timeout: 2 * time.Second}, wasmpy.KindTimeout},
		{"the entry rebound, fuel", spin + "import _wasmpy_runner as r\nr._entry_main.__dict__['_wasmpy_entry'] = _spin\n", wasmpy.Limits{Timeout: time.Minute, Fuel: 50_000_000}, wasmpy.KindFuel},
		{"the entry rebound, memory", hog + "import _wasmpy_runner as r\nr._entry_main.__dict__['_wasmpy_entry'] = _spin\n", wasmpy.Limits{Timeout: time.Minute, Memory: 96 << 20}, wasmpy.KindMemory},
		// A hook the interpreter keeps in its thread state, set off when the
		// next turn's runner is called.
		{"a profile hook", "import sys\ndef _prof(frame, event, arg):\n" +
			"    if event == 'call' and frame.f_code.co_filename == '<wasmpy-runner>' and frame.f_code.co_name == 'main':\n" +
			"        while True: pass\nsys.setprofile(_prof)\n", wasmpy.Limits{Timeout: 2 * time.Second}, wasmpy.KindTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sb, err := wasmpy.New(context.Background(), wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER")})
			require.NoError(t, err)
			sess := newSession(t, sb)
			turn(t, sess, "x = 41")
			res := turnOf(t, sess, wasmpy.Job{Code: tc.poison})
			require.NoError(t, res.Err(), "stderr: %s", res.Stderr)
			res = runWithin(t, sess, wasmpy.Job{Code: "print(x + 1)", Limits: tc.limits}, time.Minute)
			if tc.kind == "" {
				require.NoError(t, res.Err(), "stderr: %s", res.Stderr)
				require.Equal(t, "42\n", res.Stdout)
			} else {
				require.NotNil(t, res.Error, "stdout: %s", res.Stdout)
				require.Equal(t, tc.kind, res.Error.Kind, "%+v", res.Error)
				require.Equal(t, tc.kind.ExitCode(), res.ExitCode)
				if tc.limits.Memory != 0 {
					require.LessOrEqual(t, res.MemoryPeakBytes, tc.limits.Memory)
				}
			}
			// Closing does not wait for a spinning instance: there is none.
			closed := make(chan error, 1)
			go func() { closed <- sb.Close(context.Background()) }()
			select {
			case err := <-closed:
				require.NoError(t, err)
			case <-time.After(30 * time.Second):
				t.Fatal("Close did not return: an instance of the session still runs")
			}
		})
	}
}

// Making the snapshot image runs the preloads and the package sets' .pth
// lines: it is bounded by the sandbox's limits as a run is, and ends with
// a PreloadError naming what happened (issue 25, item 8).
func TestImageMakingIsBounded(t *testing.T) {
	sb := testSandbox(t)
	if sb.Interpreter().Kind != "core" {
		t.Skip("only the core build makes a snapshot image")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	require.NoError(t, os.MkdirAll(src, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "spin.py"), []byte("while True: pass\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "hog.py"), []byte("keep = []\nwhile True: keep.append(bytearray(1 << 20))\n"), 0o644))
	set, _, err := packages.Build(context.Background(), packages.BuildOptions{Inputs: []string{src}, Python: compileIn(sb)})
	require.NoError(t, err)
	setPath := filepath.Join(dir, "poison.wpkg")
	require.NoError(t, os.WriteFile(setPath, set, 0o644))
	for _, tc := range []struct {
		module string
		limits wasmpy.Limits
		want   string
	}{
		{"spin", wasmpy.Limits{Timeout: 2 * time.Second}, "took longer than 2s"},
		{"hog", wasmpy.Limits{Timeout: time.Minute, Memory: 128 << 20}, "needed more than 128 MiB of memory"},
	} {
		t.Run(tc.module, func(t *testing.T) {
			type made struct {
				sb  *wasmpy.Sandbox
				err error
			}
			c := make(chan made, 1)
			go func() {
				sb, err := wasmpy.New(context.Background(), wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER"),
					Engine: os.Getenv("WASMPY_ENGINE"), Packages: []string{setPath}, Preload: []string{tc.module}, Limits: tc.limits})
				c <- made{sb, err}
			}()
			select {
			case m := <-c:
				if m.sb != nil {
					m.sb.Close(context.Background())
				}
				var pe *wasmpy.PreloadError
				require.ErrorAs(t, m.err, &pe)
				require.Contains(t, pe.Error(), tc.want)
			case <-time.After(time.Minute):
				t.Fatal("New did not return: making the image is unbounded")
			}
		})
	}
}
