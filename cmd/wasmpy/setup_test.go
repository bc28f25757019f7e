package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/assets"
)

// testRelease packs what `make` built into the user cache, as `make
// release` does, into a temporary dist dir.
func testRelease(t *testing.T) string {
	t.Helper()
	dist := t.TempDir()
	_, err := assets.WriteRelease("", dist)
	require.NoError(t, err, "run `make` first: the release packs the interpreters it built, which must be the lock's")
	return dist
}

// interpreterDirs lists the interpreters a cache holds.
func interpreterDirs(t *testing.T, cache string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(cache, "interpreters"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "wasmpy-") || strings.HasPrefix(e.Name(), "npm-") {
			names = append(names, e.Name())
		}
	}
	return names
}

// The newcomer's path: an empty cache, `wasmpy setup --from` a release
// served over HTTP, then code with a capability, a session and numpy.
func TestSetupFromRelease(t *testing.T) {
	dist := testRelease(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(dist)))
	defer srv.Close()
	cache := t.TempDir()

	code, out, errOut := wasmpyCLI(t, "", "setup", "--cache-dir", cache, "--from", srv.URL)
	require.Equal(t, 0, code, errOut)
	for _, v := range assets.Variants() {
		require.Contains(t, out, v+" interpreter: installed from "+srv.URL)
	}
	require.Equal(t, 2, strings.Count(out, "matches the lock (verified)"), out)
	require.Contains(t, errOut, "downloading "+assets.ArchiveName(assets.Sci))

	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("from the workspace"), 0o644))
	code, out, errOut = wasmpyCLI(t, "", "exec", "--cache-dir", cache, "--workspace", ws, "--grant", "read_file", "-c", "print(read_file('notes.txt'))")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "from the workspace\n", out)

	state := filepath.Join(t.TempDir(), "state.bin")
	code, _, errOut = wasmpyCLI(t, "", "exec", "--cache-dir", cache, "--session", state, "-c", "x = 41")
	require.Equal(t, 0, code, errOut)
	code, out, errOut = wasmpyCLI(t, "", "exec", "--cache-dir", cache, "--session", state, "-c", "print(x + 1)")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "42\n", out)

	code, out, errOut = wasmpyCLI(t, "", "exec", "--cache-dir", cache, "--interpreter", "sci", "-c", "import numpy as np; print(np.arange(10).sum(), np.__version__)")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "45 2.2.4\n", out)

	code, out, errOut = wasmpyCLI(t, "", "setup", "--verify", "--cache-dir", cache)
	require.Equal(t, 0, code, errOut)
	for _, v := range assets.Variants() {
		require.Contains(t, out, v+" interpreter: "+filepathIn(cache, v)+": every file matches the lock")
	}

	// Damage is found by --verify, and setup puts the lock's file back.
	wasm := filepath.Join(assets.SciDir(cache), "python.wasm")
	b, err := os.ReadFile(wasm)
	require.NoError(t, err)
	b[len(b)/2] ^= 0xff
	require.NoError(t, os.WriteFile(wasm, b, 0o644))
	code, out, errOut = wasmpyCLI(t, "", "setup", "--verify", "--cache-dir", cache)
	require.Equal(t, exitWasmpy, code)
	require.Contains(t, out, "sci interpreter: FAILED: wasmpy: "+wasm+" is corrupt")
	require.Regexp(t, `setup --verify: 1 of [23] installed interpreters do not match the lock`, errOut)
	code, out, errOut = wasmpyCLI(t, "", "setup", "--cache-dir", cache, "--from", srv.URL)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "sci interpreter: installed from")
	require.NotContains(t, out, "core interpreter: installed from", "what matched the lock was not fetched again")
	code, _, errOut = wasmpyCLI(t, "", "setup", "--verify", "--cache-dir", cache)
	require.Equal(t, 0, code, errOut)
}

// filepathIn is where setup installs a variant in cache.
func filepathIn(cache, variant string) string {
	if variant == assets.Sci {
		return assets.SciDir(cache)
	}
	return assets.CoreDir(cache)
}

// errorLine is setup's one line of error in its stderr: the lines before
// it can only be download progress.
func errorLine(t *testing.T, stderr string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	progress := regexp.MustCompile(`^wasmpy: setup: (downloading \S+ \(.*\)|\S+: [0-9.]+ MB read)$`)
	for _, l := range lines[:len(lines)-1] {
		require.Regexp(t, progress, l, "only progress comes before the error")
	}
	return lines[len(lines)-1]
}

// rewriteArchive copies a release archive, passing each member's contents
// through edit.
func rewriteArchive(t *testing.T, src, dst string, edit func(name string, b []byte) []byte) {
	t.Helper()
	f, err := os.Open(src)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		b = edit(h.Name, b)
		h.Size = int64(len(b))
		require.NoError(t, tw.WriteHeader(h))
		_, err = tw.Write(b)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(dst, buf.Bytes(), 0o644))
}

// A tampered archive and a download cut short: one line naming the file
// and both SHA-256s (or what arrived), exit 1, and nothing installed.
func TestSetupRefusesTamperedAndTruncated(t *testing.T) {
	dist := testRelease(t)
	wantWasm, _, err := assets.LockOutputs(assets.Sci)
	require.NoError(t, err)

	tampered := t.TempDir()
	b, err := os.ReadFile(filepath.Join(dist, assets.ArchiveName(assets.Core)))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(tampered, assets.ArchiveName(assets.Core)), b, 0o644))
	var got string
	rewriteArchive(t, filepath.Join(dist, assets.ArchiveName(assets.Sci)), filepath.Join(tampered, assets.ArchiveName(assets.Sci)),
		func(name string, b []byte) []byte {
			if strings.HasSuffix(name, "/python.wasm") {
				b[len(b)-100] ^= 1
				got = fmt.Sprintf("%x", sha256.Sum256(b))
			}
			return b
		})
	cache := t.TempDir()
	code, out, errOut := wasmpyCLI(t, "", "setup", "--cache-dir", cache, "--from", tampered)
	require.Equal(t, exitWasmpy, code, out)
	require.Contains(t, errorLine(t, errOut), assets.ArchiveName(assets.Sci)+": python.wasm has sha256 "+got+", want "+wantWasm+" (interpreter.lock); nothing installed")
	require.Empty(t, interpreterDirs(t, cache), "the default's good archive is not installed either")

	full, err := os.ReadFile(filepath.Join(dist, assets.ArchiveName(assets.Sci)))
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, assets.ArchiveName(assets.Sci)) {
			w.Header().Set("Content-Length", fmt.Sprint(len(full)))
			w.Write(full[:len(full)/3])
			return
		}
		http.FileServer(http.Dir(dist)).ServeHTTP(w, r)
	}))
	defer srv.Close()
	t.Setenv(assets.ReleaseURLEnv, srv.URL) // no --from: the release URL, overridden
	code, _, errOut = wasmpyCLI(t, "", "setup", "--cache-dir", cache)
	require.Equal(t, exitWasmpy, code)
	errOut = errorLine(t, errOut)
	require.Contains(t, errOut, srv.URL+"/"+assets.ArchiveName(assets.Sci)+": ")
	require.Contains(t, errOut, fmt.Sprintf("download truncated at %d of %d bytes", len(full)/3, len(full)))
	require.Contains(t, errOut, "nothing installed")
	require.Empty(t, interpreterDirs(t, cache))

	code, _, errOut = wasmpyCLI(t, "", "setup", "--cache-dir", cache, "--from", "")
	require.Equal(t, exitUsage, code)
	require.Contains(t, errOut, "--from needs a URL or a directory")
	code, _, errOut = wasmpyCLI(t, "", "setup", "--cache-dir", cache, "--from", filepath.Join(cache, "nowhere"))
	require.Equal(t, exitWasmpy, code)
	require.Contains(t, errOut, "is no directory")
	code, _, errOut = wasmpyCLI(t, "", "setup", "--verify", "--cache-dir", cache)
	require.Equal(t, exitWasmpy, code)
	require.Contains(t, errOut, "no interpreter is installed")
}

// embedderMain is a Go program that embeds wasmpy as the README shows:
// `app install SOURCE` installs the interpreters with wasmpy.Install; `app
// N` runs the README's example N times at once, and a run granted
// read_file.
const embedderMain = `package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/workspace"
)

func main() {
	ctx := context.Background()
	if len(os.Args) == 3 && os.Args[1] == "install" {
		if err := wasmpy.Install(ctx, os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	n, _ := strconv.Atoi(os.Args[1])
	sb, err := wasmpy.New(ctx, wasmpy.Config{Workspace: workspace.Config{Stable: os.Args[2]}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer sb.Close(ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, queued := 0, 0
	for range n {
		wg.Go(func() {
			res, err := sb.Run(ctx, wasmpy.Job{Code: "print(6*7)"})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				fmt.Fprintln(os.Stderr, err)
			case res.Err() != nil:
				fmt.Fprintln(os.Stderr, res.Err())
			case res.Stdout == "42\n":
				ok++
				if res.QueuedMS > 0 {
					queued++
				}
			}
		})
	}
	wg.Wait()
	res, err := sb.Run(ctx, wasmpy.Job{Code: "print(read_file('data.txt'))", Grants: []wasmpy.Capability{wasmpy.ReadFile}})
	if err != nil || res.Err() != nil {
		fmt.Fprintln(os.Stderr, err, res.Err())
		os.Exit(1)
	}
	fmt.Printf("%d of %d ok, %d queued, %s interpreter; read_file: %s", ok, n, queued, sb.Interpreter().Kind, res.Stdout)
}
`

// A Go program in a module of its own, outside this repository (wasmpy
// replaced by this checkout): without an interpreter its error names the
// command that installs one; that command, run in its module, does; and
// wasmpy.Install does too. Then 50 runs at once all succeed.
func TestEmbedderModuleInstallsAndRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go module")
	}
	dist := testRelease(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(dist)))
	defer srv.Close()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	mod := t.TempDir()
	require.False(t, strings.HasPrefix(mod, root+string(filepath.Separator)))
	gomod := "module example.com/embedder\n\ngo 1.26.8\n\nrequire github.com/wasmpy/wasmpy v0.0.0-00010101000000-000000000000\n\nreplace github.com/wasmpy/wasmpy => " + root + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(mod, "go.mod"), []byte(gomod), 0o644))
	sums, err := os.ReadFile(filepath.Join(root, "go.sum")) // the entries `go get` would have written
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(mod, "go.sum"), sums, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(mod, "main.go"), []byte(embedderMain), 0o644))
	ws := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "data.txt"), []byte("embedded"), 0o644))

	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	require.NoError(t, err)
	// XDG_CACHE_HOME moves the user cache dir wasmpy installs into; Go's
	// own build cache stays where it is.
	env := func(cacheHome string) []string {
		return append(os.Environ(), "XDG_CACHE_HOME="+cacheHome, "GOCACHE="+strings.TrimSpace(string(gocache)),
			"GOFLAGS=-mod=mod -buildvcs=false", "WASMPY_CACHE_DIR=")
	}
	cmd := func(cacheHome string, name string, args ...string) (string, string, error) {
		c := exec.Command(name, args...)
		c.Dir, c.Env = mod, env(cacheHome)
		var out, errOut bytes.Buffer
		c.Stdout, c.Stderr = &out, &errOut
		err := c.Run()
		return out.String(), errOut.String(), err
	}
	empty := t.TempDir()
	_, errOut, err := cmd(empty, "go", "build", "-o", "app", ".")
	require.NoError(t, err, errOut)
	app := filepath.Join(mod, "app")

	// No interpreter: the error names the command.
	_, errOut, err = cmd(empty, app, "50", ws)
	require.Error(t, err)
	const setup = "go run -mod=mod github.com/wasmpy/wasmpy/cmd/wasmpy setup"
	require.Contains(t, errOut, "wasmpy: no interpreter installed: run `"+setup+"`")

	// That command, in the embedder's module, installs the release.
	args := append(strings.Fields(setup)[1:], "--from", srv.URL)
	out, errOut, err := cmd(empty, "go", args...)
	require.NoError(t, err, errOut)
	require.Contains(t, out, "core interpreter: installed from "+srv.URL)
	out, errOut, err = cmd(empty, app, "50", ws)
	require.NoError(t, err, errOut)
	require.Regexp(t, `^50 of 50 ok, [1-9][0-9]* queued, core interpreter; read_file: embedded\n$`, out)

	// wasmpy.Install, from the program itself, into another empty cache.
	other := t.TempDir()
	_, errOut, err = cmd(other, app, "install", srv.URL)
	require.NoError(t, err, errOut)
	require.DirExists(t, filepath.Join(other, "wasmpy", "interpreters", filepath.Base(assets.SciDir(""))))
	out, errOut, err = cmd(other, app, "50", ws)
	require.NoError(t, err, errOut)
	require.Regexp(t, `^50 of 50 ok, [1-9][0-9]* queued, core interpreter`, out)
}

// A build made here from other inputs is kept by a plain setup, which says
// plainly that it is not the lock's; the missing default is installed.
func TestSetupKeepsABuildOfOtherInputs(t *testing.T) {
	dist := testRelease(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(dist)))
	defer srv.Close()
	cache := t.TempDir()
	// Compiled code is keyed by content: this test shares the user's.
	userCache, err := assets.DefaultCacheDir()
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(userCache, "engine"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(userCache, "engine"), filepath.Join(cache, "engine")))

	sci := assets.SciDir(cache)
	require.NoError(t, os.MkdirAll(sci, 0o755))
	wasm, zip := []byte("\x00asm\x01\x00\x00\x00 mine"), []byte("PK mine")
	require.NoError(t, os.WriteFile(filepath.Join(sci, "python.wasm"), wasm, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(sci, "python313.zip"), zip, 0o644))
	manifest := fmt.Sprintf(`{"python_version": "3.13.5", "variant": "sci", "outputs": {"python.wasm": "%x", "python313.zip": "%x"}}`,
		sha256.Sum256(wasm), sha256.Sum256(zip))
	require.NoError(t, os.WriteFile(filepath.Join(sci, "manifest.json"), []byte(manifest), 0o644))
	lockWasm, _, err := assets.LockOutputs(assets.Sci)
	require.NoError(t, err)

	t.Setenv(assets.ReleaseURLEnv, srv.URL)
	code, out, errOut := wasmpyCLI(t, "", "setup", "--cache-dir", cache)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, fmt.Sprintf("sci interpreter: built here, and NOT the lock's: wasmpy: %s has sha256 %x, not the lock's %s", filepath.Join(sci, "python.wasm"), sha256.Sum256(wasm), lockWasm))
	require.Contains(t, out, "kept (`wasmpy setup --from URL` installs the lock's)")
	require.Contains(t, out, "core interpreter: installed from "+srv.URL)
	require.NotContains(t, out, "sci interpreter: installed")
	b, err := os.ReadFile(filepath.Join(sci, "python.wasm"))
	require.NoError(t, err)
	require.Equal(t, wasm, b)

	code, out, _ = wasmpyCLI(t, "", "setup", "--verify", "--cache-dir", cache)
	require.Equal(t, exitWasmpy, code)
	require.Contains(t, out, "sci interpreter: FAILED: wasmpy: "+filepath.Join(sci, "python.wasm")+" has sha256")
}
