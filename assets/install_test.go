package assets

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// withLock makes the package's embedded lock one that pins small fake
// builds of both variants, written into a cache dir as `make` would, and
// returns that cache dir. (The real lock's builds are exercised by the
// CLI's tests against what `make` built.)
func withLock(t *testing.T) string {
	t.Helper()
	saved := lock
	t.Cleanup(func() { lock = saved })
	out := map[string][2][]byte{
		Core: {[]byte("\x00asm\x01\x00\x00\x00 default"), []byte("PK default stdlib")},
		Sci:  {[]byte("\x00asm\x01\x00\x00\x00 sci"), []byte("PK sci stdlib")},
	}
	l := map[string]any{
		"python_version": "3.13.5",
		"inputs":         map[string]any{"cpython": map[string]any{"sha256": "x"}},
		"outputs":        map[string]string{"python.wasm": sum(out[Core][0]), "python313.zip": sum(out[Core][1])},
		"variants": map[string]any{"sci": map[string]any{"outputs": map[string]string{
			"python.wasm": sum(out[Sci][0]), "python313.zip": sum(out[Sci][1])}}},
	}
	b, err := json.Marshal(l)
	require.NoError(t, err)
	lock = b
	cache := t.TempDir()
	for v, files := range out {
		writeBuild(t, variantDir(cache, v), v, files[0], files[1])
	}
	return cache
}

func writeBuild(t *testing.T, dir, variant string, wasm, zip []byte) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "python.wasm"), wasm, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "python313.zip"), zip, 0o644))
	name := variant
	if variant == Core {
		name = "default"
	}
	m := map[string]any{"python_version": "3.13.5", "variant": name,
		"outputs": map[string]string{"python.wasm": sum(wasm), "python313.zip": sum(zip)}}
	if variant == Sci {
		m["preload"] = []string{"numpy"}
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o644))
}

// members reads a tar.gz: names and contents, in order.
func members(t *testing.T, path string) ([]string, map[string][]byte) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	var names []string
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names, files
		}
		require.NoError(t, err)
		names = append(names, h.Name)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		files[h.Name] = b
	}
}

// archive writes a tar.gz of the given members (name, contents) in order.
func archive(t *testing.T, path string, entries ...[2]string) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e[0], Mode: 0o644, Size: int64(len(e[1]))}))
		_, err := tw.Write([]byte(e[1]))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

func TestWriteReleaseIsReproducible(t *testing.T) {
	cache := withLock(t)
	a, b := t.TempDir(), t.TempDir()
	fa, err := WriteRelease(cache, a)
	require.NoError(t, err)
	fb, err := WriteRelease(cache, b)
	require.NoError(t, err)
	require.Len(t, fa, 2)
	for i := range fa {
		require.Equal(t, fa[i].SHA256, fb[i].SHA256, "the same builds give the same archive bytes")
		x, _ := os.ReadFile(fa[i].Path)
		y, _ := os.ReadFile(fb[i].Path)
		require.Equal(t, x, y)
	}
	sums, err := os.ReadFile(filepath.Join(a, "SHA256SUMS"))
	require.NoError(t, err)
	require.Contains(t, string(sums), fa[1].SHA256+"  "+ArchiveName(Sci))

	top := strings.TrimSuffix(ArchiveName(Sci), ".tar.gz")
	require.Equal(t, filepath.Base(SciDir(cache)), top, "the archive is named after the cache entry")
	names, files := members(t, filepath.Join(a, ArchiveName(Sci)))
	require.Equal(t, []string{top + "/", top + "/manifest.json", top + "/python.wasm", top + "/python313.zip"}, names)
	var m struct {
		Outputs map[string]string `json:"outputs"`
		Sizes   map[string]int    `json:"sizes"`
		Preload []string          `json:"preload"`
	}
	require.NoError(t, json.Unmarshal(files[top+"/manifest.json"], &m))
	wasm, zip, err := LockOutputs(Sci)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"python.wasm": wasm, "python313.zip": zip}, m.Outputs)
	require.Equal(t, map[string]int{"python.wasm": len(files[top+"/python.wasm"]), "python313.zip": len(files[top+"/python313.zip"])}, m.Sizes)
	require.Equal(t, []string{"numpy"}, m.Preload)

	// A build that is not the lock's is no release.
	require.NoError(t, os.WriteFile(filepath.Join(SciDir(cache), "python.wasm"), []byte("\x00asm other"), 0o644))
	_, err = WriteRelease(cache, t.TempDir())
	require.ErrorContains(t, err, "python.wasm: sha256 "+sum([]byte("\x00asm other"))+", the lock's is "+wasm)
	require.NoError(t, os.RemoveAll(SciDir(cache)))
	_, err = WriteRelease(cache, t.TempDir())
	require.ErrorContains(t, err, "the sci interpreter is not built")
}

// release writes a release of the fake builds and returns its dir.
func release(t *testing.T, cache string) string {
	t.Helper()
	dist := t.TempDir()
	_, err := WriteRelease(cache, dist)
	require.NoError(t, err)
	return dist
}

// installed lists what the cache's interpreters dir holds.
func installed(t *testing.T, cache string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(cache, "interpreters"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestInstallFromDirectoryAndURL(t *testing.T) {
	dist := release(t, withLock(t))
	srv := httptest.NewServer(http.FileServer(http.Dir(dist)))
	defer srv.Close()
	for name, src := range map[string]string{"dir": dist, "url": srv.URL + "/"} {
		t.Run(name, func(t *testing.T) {
			cache := t.TempDir()
			var seen []InstallProgress
			done, err := Install(context.Background(), InstallOptions{Source: src, CacheDir: cache,
				Progress: func(p InstallProgress) { seen = append(seen, p) }})
			require.NoError(t, err)
			require.Len(t, done, 2)
			require.False(t, done[0].Already)
			for _, v := range Variants() {
				interp, err := Load(Options{Select: v, CacheDir: cache})
				require.NoError(t, err)
				require.True(t, interp.MatchesLock)
				require.NoError(t, Check(cache, v))
			}
			interp, err := Load(Options{Select: Sci, CacheDir: cache})
			require.NoError(t, err)
			require.Equal(t, []string{"numpy"}, interp.Preload)
			require.NotEmpty(t, seen)
			last := seen[len(seen)-1]
			require.Equal(t, last.Total, last.Done, "progress ends at the archive's size")
			fi, err := os.Stat(filepath.Join(dist, last.Archive))
			require.NoError(t, err)
			require.Equal(t, fi.Size(), last.Done)
			require.ElementsMatch(t, []string{filepath.Base(CoreDir(cache)), filepath.Base(SciDir(cache))}, installed(t, cache),
				"no staging dir is left behind")

			// Installed as the lock pins it: nothing is fetched again.
			done, err = Install(context.Background(), InstallOptions{Source: "/nonexistent", CacheDir: cache})
			require.NoError(t, err)
			require.True(t, done[0].Already && done[1].Already)

			checks, err := VerifyInstalled(cache)
			require.NoError(t, err)
			for _, c := range checks[:2] {
				require.True(t, c.Installed)
				require.NoError(t, c.Err)
			}
			require.False(t, checks[2].Installed, "npm is not part of a release")
		})
	}
}

// Every way an archive can be wrong is refused with one line naming the
// file and, for a file's contents, both SHA-256s; nothing is installed,
// not even the variants whose archives were good.
func TestInstallRefusesBadArchives(t *testing.T) {
	cache := withLock(t)
	good := release(t, cache)
	wasm, zip, err := LockOutputs(Sci)
	require.NoError(t, err)
	top := strings.TrimSuffix(ArchiveName(Sci), ".tar.gz")
	_, files := members(t, filepath.Join(good, ArchiveName(Sci)))
	manifest := string(files[top+"/manifest.json"])
	okWasm, okZip := string(files[top+"/python.wasm"]), string(files[top+"/python313.zip"])

	cases := []struct {
		name  string
		write func(path string)
		want  []string
	}{
		{"tampered file", func(p string) {
			archive(t, p, [2]string{top + "/manifest.json", manifest}, [2]string{top + "/python.wasm", okWasm + "!"}, [2]string{top + "/python313.zip", okZip})
		}, []string{ArchiveName(Sci), "python.wasm has sha256 " + sum([]byte(okWasm+"!")) + ", want " + wasm}},
		{"missing file", func(p string) {
			archive(t, p, [2]string{top + "/manifest.json", manifest}, [2]string{top + "/python.wasm", okWasm})
		}, []string{"has no python313.zip (want sha256 " + zip + ")"}},
		{"truncated archive", func(p string) {
			b, err := os.ReadFile(filepath.Join(good, ArchiveName(Sci)))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, b[:len(b)*2/3], 0o644))
		}, []string{ArchiveName(Sci), "truncated"}},
		{"not an archive", func(p string) {
			require.NoError(t, os.WriteFile(p, []byte("<html>not found</html>"), 0o644))
		}, []string{"is not a wasmpy release archive"}},
		{"zip slip", func(p string) {
			archive(t, p, [2]string{top + "/../../evil", "x"})
		}, []string{`unexpected member "` + top + `/../../evil"`}},
		{"foreign member", func(p string) {
			archive(t, p, [2]string{"other/python.wasm", okWasm})
		}, []string{`unexpected member "other/python.wasm"`}},
		{"manifest of another build", func(p string) {
			archive(t, p, [2]string{top + "/manifest.json", strings.Replace(manifest, `"sci"`, `"default"`, 1)},
				[2]string{top + "/python.wasm", okWasm}, [2]string{top + "/python313.zip", okZip})
		}, []string{"manifest.json is for the \"default\" build"}},
		{"bomb", func(p string) {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			tw := tar.NewWriter(zw)
			require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: top + "/python.wasm", Mode: 0o644, Size: 4 << 30}))
			tw.Write(make([]byte, 1<<20))
			zw.Close()
			require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
		}, []string{"python.wasm claims 4294967296 bytes, more than"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dist := t.TempDir()
			b, err := os.ReadFile(filepath.Join(good, ArchiveName(Core)))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dist, ArchiveName(Core)), b, 0o644))
			tc.write(filepath.Join(dist, ArchiveName(Sci)))
			into := t.TempDir()
			_, err = Install(context.Background(), InstallOptions{Source: dist, CacheDir: into})
			require.Error(t, err)
			msg := err.Error()
			require.NotContains(t, msg, "\n")
			for _, w := range tc.want {
				require.Contains(t, msg, w)
			}
			require.Contains(t, msg, "nothing installed")
			require.Empty(t, installed(t, into), "the good default archive is not installed either")
		})
	}
}

// A download cut short (the server promised more bytes than it sent) is
// refused, naming the file and what arrived, and the cache keeps what it had.
func TestInstallTruncatedDownloadLeavesCache(t *testing.T) {
	cache := withLock(t)
	dist := release(t, cache)
	full, err := os.ReadFile(filepath.Join(dist, ArchiveName(Sci)))
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ArchiveName(Sci)) {
			w.Header().Set("Content-Length", itoa(len(full)))
			w.Write(full[:len(full)/2])
			return // the handler ends: the connection closes short
		}
		http.FileServer(http.Dir(dist)).ServeHTTP(w, r)
	}))
	defer srv.Close()

	// The cache holds a build of other inputs: it must survive.
	into := t.TempDir()
	writeBuild(t, SciDir(into), Sci, []byte("\x00asm mine"), []byte("PK mine"))
	_, err = Install(context.Background(), InstallOptions{Source: srv.URL, CacheDir: into})
	require.ErrorContains(t, err, ArchiveName(Sci))
	require.ErrorContains(t, err, "download truncated at")
	require.ErrorContains(t, err, "nothing installed")
	require.Equal(t, []string{filepath.Base(SciDir(into))}, installed(t, into))
	b, err := os.ReadFile(filepath.Join(SciDir(into), "python.wasm"))
	require.NoError(t, err)
	require.Equal(t, "\x00asm mine", string(b))
	var mismatch *LockMismatchError
	require.ErrorAs(t, Check(into, Sci), &mismatch)

	// From a whole archive, the build of other inputs is replaced.
	_, err = Install(context.Background(), InstallOptions{Source: dist, CacheDir: into})
	require.NoError(t, err)
	require.NoError(t, Check(into, Sci))
	interp, err := Load(Options{Select: Sci, CacheDir: into})
	require.NoError(t, err)
	require.True(t, interp.MatchesLock)

	// A 404 names the URL.
	_, err = Install(context.Background(), InstallOptions{Source: srv.URL + "/nothing-here", CacheDir: t.TempDir()})
	require.ErrorContains(t, err, srv.URL+"/nothing-here/"+ArchiveName(Core)+": 404")
	_, err = Install(context.Background(), InstallOptions{Source: "ftp://example/x", CacheDir: t.TempDir()})
	require.ErrorContains(t, err, "only http, https or a local directory")
	_, err = Install(context.Background(), InstallOptions{Source: dist, CacheDir: t.TempDir(), Variants: []string{"npm"}})
	require.ErrorContains(t, err, `unknown interpreter "npm"`)
}

func TestVerifyInstalledFindsDamage(t *testing.T) {
	cache := withLock(t)
	into := t.TempDir()
	_, err := Install(context.Background(), InstallOptions{Source: release(t, cache), CacheDir: into})
	require.NoError(t, err)
	wasm := filepath.Join(SciDir(into), "python.wasm")
	b, err := os.ReadFile(wasm)
	require.NoError(t, err)
	b[len(b)-1] ^= 1
	require.NoError(t, os.WriteFile(wasm, b, 0o644))
	checks, err := VerifyInstalled(into)
	require.NoError(t, err)
	require.NoError(t, checks[0].Err)
	require.ErrorContains(t, checks[1].Err, "corrupt: sha256 "+sum(b))
	// setup (Install) puts back what was damaged.
	_, err = Install(context.Background(), InstallOptions{Source: release(t, cache), CacheDir: into})
	require.NoError(t, err)
	checks, err = VerifyInstalled(into)
	require.NoError(t, err)
	require.NoError(t, checks[1].Err)
}

func TestReleaseURL(t *testing.T) {
	t.Setenv(ReleaseURLEnv, "")
	require.Equal(t, "https://github.com/wasmpy/wasmpy/releases/download/interpreters-"+lockKey(lock), ReleaseURL())
	t.Setenv(ReleaseURLEnv, "http://mirror.example/wasmpy")
	require.Equal(t, "http://mirror.example/wasmpy", ReleaseURL())
}

func TestSetupCommand(t *testing.T) {
	dep := func(version string, replaced bool) *debug.BuildInfo {
		m := &debug.Module{Path: modulePath, Version: version}
		if replaced {
			m.Replace = &debug.Module{Path: "/src/wasmpy"}
		}
		return &debug.BuildInfo{Main: debug.Module{Path: "example.com/app"}, Deps: []*debug.Module{m}}
	}
	require.Equal(t, "go run github.com/wasmpy/wasmpy/cmd/wasmpy@v1.4.0 setup", setupCommand(dep("v1.4.0", false), true))
	require.Equal(t, "go run -mod=mod github.com/wasmpy/wasmpy/cmd/wasmpy setup", setupCommand(dep("v0.0.0", true), true))
	require.Equal(t, "wasmpy setup", setupCommand(&debug.BuildInfo{Main: debug.Module{Path: modulePath}}, true))
	require.Equal(t, "go run github.com/wasmpy/wasmpy/cmd/wasmpy@latest setup", setupCommand(nil, false))

	_, err := Load(Options{CacheDir: t.TempDir()})
	require.ErrorIs(t, err, ErrNotInstalled)
	require.ErrorContains(t, err, "run `wasmpy setup`", "a test binary of wasmpy's own module")
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
