package assets

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// build.sh refuses an input that is missing or not the pinned one: one line
// names the file, the expected and the actual SHA-256 and where to get it,
// the exit status is 1, and nothing appears where the interpreter goes (nor
// does it when a step fails after the inputs passed). The
// driver and library are the real ones; a recipe of the test's own, with a
// file input (WASMPY_SOURCES), stands in for the real recipes, so no
// network is needed.
func TestBuildRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	// The recipe needs no toolchain package but jq, says when its input
	// passed, runs a step (whose first command fails with PROBE_MIDSTEP set),
	// and stops there, or with PROBE_LINK set fails the link halfway.
	recipes := map[string]string{"00-probe.sh": "TOOL_PACKAGES=(jq)\ninput probe file probe-1.0.tar.xz\nrecipe probe\n" +
		"probe() { say \"probe built from ${IN_FILE[probe]}\"; step probe-step probe_step; [ -n \"${PROBE_LINK:-}\" ] || exit 0; }\n" +
		"probe_step() { [ -z \"${PROBE_MIDSTEP:-}\" ] || cp \"$WORK/no-such-file\" \"$WORK/copy\"; echo \"probe step done\"; }\n" +
		"link_reactor() { echo partial >\"$STAGE/python.wasm\"; return 1; }\n"}
	build := fakeBuildDir(t, dir, recipes)
	good := []byte("the pinned source\n")
	sum := sha256.Sum256(good)
	want := hex.EncodeToString(sum[:])
	lock, err := json.Marshal(map[string]any{"suite": "trixie", "inputs": map[string]any{"probe": map[string]string{
		"package": "probe-1.0.tar.xz", "type": "file", "version": "1.0", "file": "probe-1.0.tar.xz",
		"sha256": want, "from": "the probe's release page"}}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(build, "interpreter.lock"), lock, 0o644))

	sources := filepath.Join(dir, "sources")
	require.NoError(t, os.MkdirAll(sources, 0o755))
	out := filepath.Join(dir, "interpreters", "wasmpy-test")
	buildSh := func(env ...string) (string, int) {
		return runBuildSh(t, build, append([]string{"WASMPY_BUILD_DIR=" + filepath.Join(dir, "work"), "WASMPY_SOURCES="}, env...), out)
	}
	noOutput := func() {
		t.Helper()
		matches, err := filepath.Glob(out + "*")
		require.NoError(t, err)
		require.Empty(t, matches, "a failed build leaves nothing where the interpreter goes")
	}
	msg, rc := buildSh()
	if rc == 3 {
		t.Skipf("this machine cannot build: %s", msg)
	}

	t.Run("no source directory", func(t *testing.T) {
		// Without WASMPY_SOURCES, ../shared/sources beside the checkout (build/
		// stands for assets/build/, so dir's parent for the checkout, which
		// is no git worktree).
		require.Equal(t, 1, rc, msg)
		require.Contains(t, msg, "build.sh: error: probe: source directory "+filepath.Join(filepath.Dir(filepath.Dir(dir)), "shared", "sources")+
			" does not exist: it must hold probe-1.0.tar.xz (SHA-256 "+want+
			"); set WASMPY_SOURCES to the directory that holds it; get it from the probe's release page\n")
		noOutput()
	})
	t.Run("missing file", func(t *testing.T) {
		msg, rc := buildSh("WASMPY_SOURCES=" + sources)
		require.Equal(t, 1, rc, msg)
		require.Contains(t, msg, "build.sh: error: probe: "+sources+"/probe-1.0.tar.xz is missing (SHA-256 "+want+
			"); get it from the probe's release page\n")
		noOutput()
	})
	t.Run("wrong hash", func(t *testing.T) {
		bad := []byte("a tampered source\n")
		require.NoError(t, os.WriteFile(filepath.Join(sources, "probe-1.0.tar.xz"), bad, 0o644))
		got := sha256.Sum256(bad)
		msg, rc := buildSh("WASMPY_SOURCES=" + sources)
		require.Equal(t, 1, rc, msg)
		require.Contains(t, msg, "build.sh: error: probe: "+sources+"/probe-1.0.tar.xz has SHA-256 "+
			hex.EncodeToString(got[:])+" but interpreter.lock pins "+want+"; get the pinned file from the probe's release page\n")
		require.NotContains(t, msg, "probe built")
		noOutput()
	})
	t.Run("the pinned file", func(t *testing.T) {
		require.NoError(t, os.WriteFile(filepath.Join(sources, "probe-1.0.tar.xz"), good, 0o644))
		msg, rc := buildSh("WASMPY_SOURCES=" + sources)
		require.Equal(t, 0, rc, msg)
		require.Contains(t, msg, "build.sh: probe built from probe-1.0.tar.xz\n")
		require.False(t, strings.Contains(msg, "error"), msg)
	})
	t.Run("a clone of a local checkout", func(t *testing.T) {
		// `git clone . /tmp/fresh` has no shared/sources beside it: the
		// build looks beside the checkout it was cloned from.
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("needs git")
		}
		base := t.TempDir()
		origin, clone := filepath.Join(base, "o", "main"), filepath.Join(base, "c", "clone")
		git := func(args ...string) {
			out, err := exec.Command("git", args...).CombinedOutput()
			require.NoError(t, err, string(out))
		}
		git("init", "-q", origin)
		git("-C", origin, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x")
		git("clone", "-q", origin, clone)
		shared := filepath.Join(base, "o", "shared", "sources")
		require.NoError(t, os.MkdirAll(shared, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(shared, "probe-1.0.tar.xz"), good, 0o644))
		cloned := fakeBuildDir(t, filepath.Join(clone, "assets"), recipes)
		require.NoError(t, os.WriteFile(filepath.Join(cloned, "interpreter.lock"), lock, 0o644))
		msg, rc := runBuildSh(t, cloned, []string{"WASMPY_BUILD_DIR=" + filepath.Join(base, "work"), "WASMPY_SOURCES="},
			filepath.Join(base, "out", "wasmpy-test"))
		require.Equal(t, 0, rc, msg)
		require.Contains(t, msg, "build.sh: probe built from probe-1.0.tar.xz\n")
	})
	t.Run("a step fails after the inputs", func(t *testing.T) {
		msg, rc := buildSh("WASMPY_SOURCES="+sources, "PROBE_LINK=1")
		require.Equal(t, 1, rc, msg)
		require.Regexp(t, `build.sh: link-reactor +FAILED`, msg)
		noOutput()
	})
	t.Run("a command fails in the middle of a step", func(t *testing.T) {
		// The step's last command succeeds: the step fails all the same,
		// at the command that failed, and its log's tail says why.
		msg, rc := buildSh("WASMPY_SOURCES="+sources, "PROBE_MIDSTEP=1")
		require.Equal(t, 1, rc, msg)
		require.Regexp(t, `build.sh: probe-step +FAILED`, msg)
		require.Contains(t, msg, "no-such-file")
		require.NotContains(t, msg, "probe step done")
		noOutput()
	})
}

// runBuildSh runs BUILD/build.sh with args, env added to this process's, and
// returns its output and exit status.
func runBuildSh(t *testing.T, build string, env []string, args ...string) (string, int) {
	cmd := exec.Command("bash", append([]string{filepath.Join(build, "build.sh")}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	b, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil {
		require.ErrorAs(t, err, &exit, string(b))
		return string(b), exit.ExitCode()
	}
	return string(b), 0
}

// fakeBuildDir is DIR/build with the real build.sh and lib.sh and the given
// recipes instead of the real ones; it skips without the tools they need.
func fakeBuildDir(t *testing.T, dir string, recipes map[string]string) string {
	for _, tool := range []string{"bash", "jq", "flock", "sha256sum", "dpkg-query"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("build.sh needs %s", tool)
		}
	}
	build := filepath.Join(dir, "build")
	require.NoError(t, os.MkdirAll(filepath.Join(build, "recipes"), 0o755))
	for _, f := range []string{"build.sh", "lib.sh"} {
		b, err := os.ReadFile(filepath.Join("build", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(build, f), b, 0o755))
	}
	for name, text := range recipes {
		require.NoError(t, os.WriteFile(filepath.Join(build, "recipes", name), []byte(text), 0o644))
	}
	return build
}

// WASMPY_UPDATE_LOCK=1 with --variant re-pins only the variant's own inputs
// and writes its outputs under variants: an input it shares with the
// default build stays as pinned (a changed one is refused, as without the
// update), and the default's outputs stay.
func TestBuildVariantUpdatesItsOwnLock(t *testing.T) {
	dir := t.TempDir()
	build := fakeBuildDir(t, dir, map[string]string{
		"00-base.sh": "TOOL_PACKAGES=(jq)\nEXPORTS=(_initialize)\ninput base file base-1.0.tar.xz\nrecipe base\n" +
			"base() { PY_VERSION=3.13.0; }\n" +
			"link_reactor() { echo \"wasm $VARIANT\" >\"$STAGE/python.wasm\"; }\n" +
			"build_stdlib() { echo \"zip $VARIANT\" >\"$STAGE/python313.zip\"; }\n",
		"70-extra.sh": "[ \"$VARIANT\" = sci ] || return 0\ninput extra file extra-2.0.tar.xz sci\n",
	})
	sources := filepath.Join(dir, "sources")
	require.NoError(t, os.MkdirAll(sources, 0o755))
	hash := func(b string) string { h := sha256.Sum256([]byte(b)); return hex.EncodeToString(h[:]) }
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(sources, name), []byte(text), 0o644))
	}
	write("base-1.0.tar.xz", "base\n")
	write("extra-2.0.tar.xz", "extra, a new release\n")
	entry := func(file, text string) map[string]string {
		return map[string]string{"package": file, "type": "file", "version": "1", "file": file, "sha256": hash(text)}
	}
	extra := entry("extra-2.0.tar.xz", "extra, the old release\n")
	extra["variant"] = "sci"
	defaultOutputs := map[string]string{"python.wasm": hash("wasm default\n"), "python313.zip": hash("zip default\n")}
	lock, err := json.MarshalIndent(map[string]any{"suite": "trixie", "inputs": map[string]any{
		"base": entry("base-1.0.tar.xz", "base\n"), "extra": extra}, "outputs": defaultOutputs}, "", "  ")
	require.NoError(t, err)
	lockPath := filepath.Join(build, "interpreter.lock")
	require.NoError(t, os.WriteFile(lockPath, lock, 0o644))
	buildSh := func(out string, env ...string) (string, int) {
		env = append([]string{"WASMPY_BUILD_DIR=" + filepath.Join(dir, "work"), "WASMPY_SOURCES=" + sources, "WASMPY_UPDATE_LOCK=1"}, env...)
		return runBuildSh(t, build, env, "--variant", "sci", filepath.Join(dir, out))
	}

	write("base-1.0.tar.xz", "base, changed\n")
	msg, rc := buildSh("sci-1")
	if rc == 3 {
		t.Skipf("this machine cannot build: %s", msg)
	}
	require.Equal(t, 1, rc, msg)
	require.Contains(t, msg, "base-1.0.tar.xz has SHA-256 "+hash("base, changed\n")+" but interpreter.lock pins "+hash("base\n"))
	after, err := os.ReadFile(lockPath)
	require.NoError(t, err)
	require.Equal(t, string(lock), string(after), "a refused update rewrote the lock")

	write("base-1.0.tar.xz", "base\n")
	msg, rc = buildSh("sci-1")
	require.Equal(t, 0, rc, msg)
	var got struct {
		Inputs   map[string]map[string]string         `json:"inputs"`
		Outputs  map[string]string                    `json:"outputs"`
		Variants map[string]map[string]map[string]any `json:"variants"`
	}
	after, err = os.ReadFile(lockPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(after, &got))
	require.Equal(t, entry("base-1.0.tar.xz", "base\n"), got.Inputs["base"])
	require.Equal(t, hash("extra, a new release\n"), got.Inputs["extra"]["sha256"])
	require.Equal(t, "sci", got.Inputs["extra"]["variant"])
	require.Equal(t, defaultOutputs, got.Outputs)
	require.Equal(t, map[string]any{"python.wasm": hash("wasm sci\n"), "python313.zip": hash("zip sci\n")}, got.Variants["sci"]["outputs"])

	// The lock now describes the build: one without the update agrees.
	msg, rc = buildSh("sci-2", "WASMPY_UPDATE_LOCK=")
	require.Equal(t, 0, rc, msg)
	require.NotContains(t, msg, "NOTICE", msg)
}
