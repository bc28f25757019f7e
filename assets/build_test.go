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
	for _, tool := range []string{"bash", "jq", "flock", "sha256sum", "dpkg-query"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("build.sh needs %s", tool)
		}
	}
	dir := t.TempDir()
	build := filepath.Join(dir, "build")
	require.NoError(t, os.MkdirAll(filepath.Join(build, "recipes"), 0o755))
	for _, f := range []string{"build.sh", "lib.sh"} {
		b, err := os.ReadFile(filepath.Join("build", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(build, f), b, 0o755))
	}
	// The recipe needs no toolchain package but jq, says when its input
	// passed, and stops there, or with PROBE_LINK set fails the link halfway.
	recipe := "TOOL_PACKAGES=(jq)\ninput probe file probe-1.0.tar.xz\nrecipe probe\n" +
		"probe() { say \"probe built from ${IN_FILE[probe]}\"; [ -n \"${PROBE_LINK:-}\" ] || exit 0; }\n" +
		"link_reactor() { echo partial >\"$STAGE/python.wasm\"; return 1; }\n"
	require.NoError(t, os.WriteFile(filepath.Join(build, "recipes", "00-probe.sh"), []byte(recipe), 0o644))
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
		cmd := exec.Command("bash", filepath.Join(build, "build.sh"), out)
		cmd.Env = append(os.Environ(), "WASMPY_BUILD_DIR="+filepath.Join(dir, "work"), "WASMPY_SOURCES=")
		cmd.Env = append(cmd.Env, env...)
		b, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil {
			require.ErrorAs(t, err, &exit, string(b))
			return string(b), exit.ExitCode()
		}
		return string(b), 0
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
		require.Equal(t, 1, rc, msg)
		require.Contains(t, msg, "build.sh: error: probe: no source directory for probe-1.0.tar.xz (SHA-256 "+want+
			"): set WASMPY_SOURCES to the directory that holds it; get it from the probe's release page\n")
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
	t.Run("a step fails after the inputs", func(t *testing.T) {
		msg, rc := buildSh("WASMPY_SOURCES="+sources, "PROBE_LINK=1")
		require.Equal(t, 1, rc, msg)
		require.Regexp(t, `build.sh: link-reactor +FAILED`, msg)
		noOutput()
	})
}
