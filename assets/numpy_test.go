package assets

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/internal/testing/needs"
)

// A build's manifest names what to preload and the packages it carries.
func TestLoadBuildPreloadAndPackages(t *testing.T) {
	dir := fakeBuild(t)
	m, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	require.NoError(t, err)
	m = []byte(strings.Replace(string(m), "{", `{"variant": "sci", "preload": ["numpy"], "packages": [{"name": "numpy", "version": "2.2.4"}], `, 1))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.json"), m, 0o644))
	interp, err := Load(Options{Select: dir})
	require.NoError(t, err)
	require.Equal(t, []string{"numpy"}, interp.Preload)
	require.Equal(t, []Package{{Name: "numpy", Version: "2.2.4"}}, interp.Packages)
}

// sci lives beside the default build, and its absence says how to make it.
func TestLoadSciNotInstalled(t *testing.T) {
	cache := t.TempDir()
	require.Equal(t, filepath.Dir(CoreDir(cache)), filepath.Dir(SciDir(cache)))
	require.Regexp(t, `^wasmpy-sci-[0-9a-f]{12}$`, filepath.Base(SciDir(cache)))
	_, err := Load(Options{Select: Sci, CacheDir: cache})
	require.ErrorContains(t, err, "the sci interpreter (with numpy) is not installed in "+SciDir(cache)+": run `wasmpy setup` (or build it: `make interpreter`)")
}

// The default build's cache key ignores the variants' inputs and outputs
// (pinning sci does not move the default's cache entry), but not a change of
// its own inputs or outputs; sci's key is the whole lock.
func TestDefaultLockKey(t *testing.T) {
	var l map[string]any
	require.NoError(t, json.Unmarshal(lock, &l), "interpreter.lock must parse")
	key := func(edit func(map[string]any)) (string, string) {
		var c map[string]any
		require.NoError(t, json.Unmarshal(lock, &c))
		edit(c)
		b, err := json.MarshalIndent(c, "", "  ")
		require.NoError(t, err)
		return lockKey(defaultLock(b)), lockKey(b)
	}
	def, sci := key(func(map[string]any) {})
	require.Equal(t, lockKey(defaultLock(lock)), def)

	d, s := key(func(c map[string]any) {
		c["variants"] = map[string]any{"sci": map[string]any{"outputs": map[string]any{"python.wasm": "00"}}}
		c["inputs"].(map[string]any)["extra"] = map[string]any{"variant": "sci", "sha256": "11"}
	})
	require.Equal(t, def, d, "a variant's entries moved the default's key")
	require.NotEqual(t, sci, s)

	d, s = key(func(c map[string]any) { c["outputs"].(map[string]any)["python.wasm"] = "22" })
	require.NotEqual(t, def, d)
	require.NotEqual(t, sci, s)
	d, _ = key(func(c map[string]any) { c["inputs"].(map[string]any)["zlib"].(map[string]any)["sha256"] = "33" })
	require.NotEqual(t, def, d)
}

// The sci build refuses a missing or different numpy tarball before it
// builds anything, naming the file, the hashes and where to get it.
func TestBuildNumpySourceChecked(t *testing.T) {
	bad := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bad, "numpy-2.2.4.tar.xz"), []byte("not numpy"), 0o644))
	for _, tc := range []struct{ name, sources, want string }{
		{"no directory", filepath.Join(bad, "nowhere"), "numpy: source directory " + filepath.Join(bad, "nowhere") + " does not exist: it must hold numpy-2.2.4.tar.xz (SHA-256 62403b55"},
		{"no file", t.TempDir(), "numpy-2.2.4.tar.xz is missing (SHA-256 62403b55"},
		{"wrong hash", bad, "numpy-2.2.4.tar.xz has SHA-256 4699f7896b36cb3f69f319c183bd948bb6debea599652acd3edc897bd2ef0bbb but interpreter.lock pins 62403b55"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			cmd := exec.Command("build/build.sh", "--variant", "sci", out)
			cmd.Env = append(os.Environ(), "WASMPY_BUILD_DIR="+t.TempDir(), "WASMPY_SOURCES="+tc.sources)
			msg, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "%s", msg)
			if exit.ExitCode() == 3 {
				t.Skipf("this host cannot build: %s", msg)
			}
			require.Equal(t, 1, exit.ExitCode(), "%s", msg)
			require.Contains(t, string(msg), tc.want)
			require.Contains(t, string(msg), "from numpy's git tag v2.2.4 with the submodules it pins")
			require.NoDirExists(t, out)
		})
	}
}

// Cython names the C constant holding a .pyx's path after that path, and
// emits the constants sorted by name: a name made of the work dir's path
// put it elsewhere in another work dir, and sci's python.wasm differed. The
// numpy build hands Cython its sources under the build dir (wasmpy-src), so
// no constant, nor any string, of its C output names the work dir.
func TestNumpyCythonOutputKnowsNoWorkDir(t *testing.T) {
	work := os.Getenv("WASMPY_BUILD_DIR")
	if work == "" {
		cache, err := os.UserCacheDir()
		require.NoError(t, err)
		work = filepath.Join(cache, "wasmpy", "build")
	}
	var files []string
	filepath.WalkDir(filepath.Join(work, "numpy", "build"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".pyx.c") {
			files = append(files, path)
		}
		return nil
	})
	if len(files) == 0 {
		needs.Skipf(t, "needs the sci build's work dir (run `make`; WASMPY_BUILD_DIR): no Cython output in %s", work)
	}
	// Cython's constant names replace what is not a letter or digit by "_".
	mangled := regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(strings.Trim(work, "/"), "_")
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NotContains(t, string(b), work, f)
		require.NotContains(t, string(b), "__pyx_k_"+mangled[:min(len(mangled), 20)], "%s: a constant named after the work dir", f)
	}
	require.GreaterOrEqual(t, len(files), 9, "numpy.random's modules, at least")
}
