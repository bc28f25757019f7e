package assets

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// ReleaseURLEnv names the environment variable that overrides the release
// base URL (a mirror is just another URL).
const ReleaseURLEnv = "WASMPY_RELEASE_URL"

// releaseURL is the build-time default release base URL, set with
// -ldflags "-X github.com/wasmpy/wasmpy/assets.releaseURL=https://…";
// empty: the project's release for this lock (see ReleaseURL).
var releaseURL string

// ReleaseURL is where setup downloads the archives by default: $WASMPY_RELEASE_URL,
// else the URL this binary was built with, else the project's release
// named after the embedded lock (interpreters-KEY), so every version of
// wasmpy with the same lock fetches the same archives.
func ReleaseURL() string {
	if u := os.Getenv(ReleaseURLEnv); u != "" {
		return u
	}
	if releaseURL != "" {
		return releaseURL
	}
	return "https://github.com/wasmpy/wasmpy/releases/download/interpreters-" + lockKey(lock)
}

// InstallOptions configures Install.
type InstallOptions struct {
	// Source is the release base: an http(s) URL or a local directory
	// holding what `make release` wrote; Install takes from it the archives
	// the embedded lock names (ArchiveName). "" means ReleaseURL().
	Source string
	// CacheDir is the cache to install into; "" means DefaultCacheDir().
	CacheDir string
	// Variants are the builds to install; nil means all of Variants().
	Variants []string
	// Progress, when set, is called as an archive's bytes arrive, from the
	// goroutine calling Install.
	Progress func(InstallProgress)
	// Client fetches http(s) sources; nil means http.DefaultClient.
	Client *http.Client
}

// InstallProgress reports an archive's download.
type InstallProgress struct {
	Archive string // its file name
	Done    int64  // bytes read so far
	Total   int64  // its size, -1 when the server does not say
}

// Installed is one variant Install handled.
type Installed struct {
	Variant string
	Dir     string
	SHA256  string // python.wasm's, the lock's
	// Already means a build matching the lock was there: nothing was fetched.
	Already bool
}

// Install downloads the release archives of the embedded lock from
// opts.Source and installs them into the cache. Every file is checked
// against the lock's SHA-256 before anything lands; the archives are read
// with bounds (known members only, sizes capped), and the variants are
// moved into place only when all of them passed, each by a rename. On any
// error the cache is as it was. A variant whose installed build already
// matches the lock is not fetched again.
func Install(ctx context.Context, opts InstallOptions) ([]Installed, error) {
	cache := opts.CacheDir
	if cache == "" {
		var err error
		if cache, err = DefaultCacheDir(); err != nil {
			return nil, err
		}
	}
	want := slices.Clone(opts.Variants)
	if want == nil {
		want = slices.Clone(variants)
	}
	for i, v := range want {
		if want[i] = Canonical(v); !slices.Contains(variants, want[i]) {
			return nil, fmt.Errorf("wasmpy: setup: unknown interpreter %q (a release has %s)", v, strings.Join(variants, ", "))
		}
	}
	src := opts.Source
	if src == "" {
		src = ReleaseURL()
	}
	interps := filepath.Join(cache, "interpreters")
	if err := os.MkdirAll(interps, 0o755); err != nil {
		return nil, fmt.Errorf("wasmpy: setup: %w", err)
	}
	removeStale(interps)
	stage, err := os.MkdirTemp(interps, ".setup-")
	if err != nil {
		return nil, fmt.Errorf("wasmpy: setup: %w", err)
	}
	defer os.RemoveAll(stage)

	var done []Installed
	var fetched []string
	for _, v := range want {
		p, err := pins(v)
		if err != nil {
			return nil, err
		}
		dir := variantDir(cache, v)
		if matchesLock(dir, p, filepath.Join(interps, "verified")) == nil {
			done = append(done, Installed{Variant: v, Dir: dir, SHA256: p.Outputs["python.wasm"], Already: true})
			continue
		}
		if err := fetchVariant(ctx, opts, src, v, p, filepath.Join(stage, v)); err != nil {
			return nil, fmt.Errorf("%w; nothing installed", err)
		}
		fetched = append(fetched, v)
		done = append(done, Installed{Variant: v, Dir: dir, SHA256: p.Outputs["python.wasm"]})
	}
	// Every archive passed: move them in, each by renames; a build that was
	// there (another one, or a damaged one) is set aside, then removed.
	var moved []string
	for _, v := range fetched {
		dst := variantDir(cache, v)
		old := filepath.Join(stage, "old-"+v)
		hadOld := os.Rename(dst, old) == nil
		if err := os.Rename(filepath.Join(stage, v), dst); err != nil {
			if hadOld {
				os.Rename(old, dst)
			}
			for _, m := range moved { // put back what this call moved in
				d := variantDir(cache, m)
				os.Rename(d, filepath.Join(stage, "new-"+m))
				os.Rename(filepath.Join(stage, "old-"+m), d)
			}
			return nil, fmt.Errorf("wasmpy: setup: %w; nothing installed", err)
		}
		moved = append(moved, v)
	}
	return done, nil
}

// removeStale removes what a setup killed midway left (a staging dir
// older than a day): never an installed build.
func removeStale(interps string) {
	old, _ := filepath.Glob(filepath.Join(interps, ".setup-*"))
	for _, d := range old {
		if fi, err := os.Stat(d); err == nil && time.Since(fi.ModTime()) > 24*time.Hour {
			os.RemoveAll(d)
		}
	}
}

// matchesLock checks that dir holds the build p pins: its manifest names
// the lock's outputs, and the files hash to them (stamps: see verify).
func matchesLock(dir string, p lockPins, stamps string) error {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return err
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("wasmpy: %s/manifest.json: %w", dir, err)
	}
	for _, name := range releaseFiles[1:] {
		if m.Outputs[name] != p.Outputs[name] {
			return &LockMismatchError{File: filepath.Join(dir, name), Got: m.Outputs[name], Want: p.Outputs[name]}
		}
		if _, err := verify(filepath.Join(dir, name), p.Outputs[name], stamps); err != nil {
			return err
		}
	}
	return nil
}

// Check reports whether the cache holds variant's build as the lock pins
// it: nil if so; an error wrapping os.ErrNotExist when it is not
// installed; a *LockMismatchError for a build of other inputs; another
// error for a damaged one. A file verified before and unchanged since is
// not hashed again (see Load); VerifyInstalled hashes everything.
func Check(cacheDir, variant string) error {
	if cacheDir == "" {
		var err error
		if cacheDir, err = DefaultCacheDir(); err != nil {
			return err
		}
	}
	p, err := pins(variant)
	if err != nil {
		return err
	}
	return matchesLock(variantDir(cacheDir, variant), p, filepath.Join(cacheDir, "interpreters", "verified"))
}

// LockMismatchError is an installed build that is not the lock's: built
// here with another toolchain or recipe, and kept, but not what the lock
// pins.
type LockMismatchError struct {
	File      string
	Got, Want string // SHA-256s: the build's and the lock's
}

func (e *LockMismatchError) Error() string {
	return fmt.Sprintf("wasmpy: %s has sha256 %s, not the lock's %s (built here from other inputs or another toolchain)", e.File, e.Got, e.Want)
}

// countingReader reports progress and refuses to read past a bound.
type countingReader struct {
	r        io.Reader
	name     string
	n, total int64
	last     int64
	progress func(InstallProgress)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > maxArchive {
		return n, fmt.Errorf("more than %d bytes", int64(maxArchive))
	}
	if c.progress != nil && (c.n-c.last >= 1<<20 || (err == io.EOF && c.n != c.last)) {
		c.last = c.n
		c.progress(InstallProgress{Archive: c.name, Done: c.n, Total: c.total})
	}
	return n, err
}

// open returns an archive of the release at src, and its size (-1: unknown).
func open(ctx context.Context, opts InstallOptions, src, name string) (io.ReadCloser, int64, string, error) {
	u, err := url.Parse(src)
	if err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		where := strings.TrimSuffix(src, "/") + "/" + name
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, where, nil)
		if err != nil {
			return nil, 0, where, fmt.Errorf("wasmpy: setup: %s: %w", where, err)
		}
		client := opts.Client
		if client == nil {
			client = http.DefaultClient
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, 0, where, fmt.Errorf("wasmpy: setup: %w", err)
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, 0, where, fmt.Errorf("wasmpy: setup: GET %s: %s", where, resp.Status)
		}
		if resp.ContentLength > maxArchive {
			resp.Body.Close()
			return nil, 0, where, fmt.Errorf("wasmpy: setup: %s is %d bytes, more than an archive may be (%d)", where, resp.ContentLength, int64(maxArchive))
		}
		return resp.Body, resp.ContentLength, where, nil
	}
	if err == nil && u.Scheme != "" && len(u.Scheme) > 1 { // (not a Windows drive letter)
		return nil, 0, src, fmt.Errorf("wasmpy: setup: %s: only http, https or a local directory", src)
	}
	where := filepath.Join(src, name)
	fi, err := os.Stat(src)
	if err != nil || !fi.IsDir() {
		return nil, 0, where, fmt.Errorf("wasmpy: setup: %s is no directory (give what `make release` wrote, or an http(s) URL)", src)
	}
	f, err := os.Open(where)
	if err != nil {
		return nil, 0, where, fmt.Errorf("wasmpy: setup: %s: %w (the archive for this lock; `make release` writes it)", where, unwrapPath(err))
	}
	size := int64(-1)
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	return f, size, where, nil
}

// fetchVariant reads a variant's archive from src into dir (new), checking
// every file against the lock's pins p.
func fetchVariant(ctx context.Context, opts InstallOptions, src, variant string, p lockPins, dir string) error {
	name := ArchiveName(variant)
	body, total, where, err := open(ctx, opts, src, name)
	if err != nil {
		return err
	}
	defer body.Close()
	cr := &countingReader{r: body, name: name, total: total, progress: opts.Progress}
	if opts.Progress != nil {
		opts.Progress(InstallProgress{Archive: name, Total: total})
	}
	truncated := func(err error) error {
		if total >= 0 && cr.n < total {
			return fmt.Errorf("download truncated at %d of %d bytes (%v)", cr.n, total, err)
		}
		return err
	}
	zr, err := gzip.NewReader(cr)
	if err != nil {
		return fmt.Errorf("wasmpy: setup: %s is not a wasmpy release archive (no gzip stream: %v)", where, truncated(err))
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("wasmpy: setup: %w", err)
	}
	top := strings.TrimSuffix(name, ".tar.gz")
	got := map[string]string{}
	sizes := map[string]int64{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("wasmpy: setup: %s: truncated or not a tar archive: %v", where, truncated(err))
		}
		if h.Typeflag == tar.TypeDir && strings.TrimSuffix(h.Name, "/") == top {
			continue
		}
		member, ok := strings.CutPrefix(h.Name, top+"/")
		if !ok || (h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeRegA) || !slices.Contains(releaseFiles, member) {
			return fmt.Errorf("wasmpy: setup: %s is not the wasmpy release archive it is named after: unexpected member %q (type %q)", where, h.Name, h.Typeflag)
		}
		if _, dup := got[member]; dup {
			return fmt.Errorf("wasmpy: setup: %s is not a wasmpy release archive: %s twice", where, h.Name)
		}
		limit := int64(maxOutput)
		if member == "manifest.json" {
			limit = maxManifest
		}
		if h.Size < 0 || h.Size > limit {
			return fmt.Errorf("wasmpy: setup: %s: %s claims %d bytes, more than %d", where, member, h.Size, limit)
		}
		f, err := os.OpenFile(filepath.Join(dir, member), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return fmt.Errorf("wasmpy: setup: %w", err)
		}
		hash := sha256.New()
		n, err := io.Copy(io.MultiWriter(f, hash), tr) // tar stops at h.Size
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		actual := hex.EncodeToString(hash.Sum(nil))
		if err != nil {
			return fmt.Errorf("wasmpy: setup: %s: %s truncated after %d of %d bytes: sha256 %s, want %s (%v)",
				where, member, n, h.Size, actual, wantOf(p, member), truncated(err))
		}
		got[member], sizes[member] = actual, n
	}
	// The rest of the gzip stream: tar's padding, then the checksum, which
	// is checked only once read.
	if n, err := io.Copy(io.Discard, io.LimitReader(zr, 1<<20)); err != nil {
		return fmt.Errorf("wasmpy: setup: %s: truncated or corrupt after its last file: %v", where, truncated(err))
	} else if n == 1<<20 {
		return fmt.Errorf("wasmpy: setup: %s is not a wasmpy release archive: data after its files", where)
	}
	for _, member := range releaseFiles {
		if _, ok := got[member]; !ok {
			return fmt.Errorf("wasmpy: setup: %s has no %s (want sha256 %s)", where, member, wantOf(p, member))
		}
	}
	for _, member := range releaseFiles[1:] {
		if got[member] != p.Outputs[member] {
			return fmt.Errorf("wasmpy: setup: %s: %s has sha256 %s, want %s (interpreter.lock)", where, member, got[member], p.Outputs[member])
		}
	}
	return checkManifest(filepath.Join(dir, "manifest.json"), where, variant, p, sizes)
}

func wantOf(p lockPins, member string) string {
	if w := p.Outputs[member]; w != "" {
		return w
	}
	return "(any: the manifest is checked against the lock)"
}

var moduleName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// checkManifest checks that an archive's manifest, which the lock does not
// hash, describes exactly the lock's build.
func checkManifest(path, where, variant string, p lockPins, sizes map[string]int64) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var m struct {
		manifest
		Variant string           `json:"variant"`
		Sizes   map[string]int64 `json:"sizes"`
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("wasmpy: setup: %s: manifest.json %s", where, fmt.Sprintf(format, args...))
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return bad("does not parse: %v", err)
	}
	wantVariant := Canonical(variant)
	if wantVariant == Core {
		wantVariant = "default"
	}
	switch {
	case m.Variant != wantVariant:
		return bad("is for the %q build, not %q", m.Variant, wantVariant)
	case m.PythonVersion != p.PythonVersion:
		return bad("says Python %q, the lock %q", m.PythonVersion, p.PythonVersion)
	}
	for _, f := range releaseFiles[1:] {
		if m.Outputs[f] != p.Outputs[f] {
			return bad("names %s sha256 %q, the lock %s", f, m.Outputs[f], p.Outputs[f])
		}
		if m.Sizes[f] != sizes[f] {
			return bad("gives %s %d bytes, the archive %d", f, m.Sizes[f], sizes[f])
		}
	}
	for _, mod := range m.Preload {
		if !moduleName.MatchString(mod) {
			return bad("preloads %q, not a module name", mod)
		}
	}
	return nil
}

// Verification is what VerifyInstalled found of one interpreter.
type Verification struct {
	Interpreter string // "core", "sci", "npm"
	Dir         string // where it is (or would be) installed
	Installed   bool
	SHA256      string // python.wasm's, the lock's
	// Err is nil when every file hashes to the lock's SHA-256 now; a
	// *LockMismatchError for a build of other inputs; any other error for
	// a damaged one.
	Err error
}

// VerifyInstalled hashes every file of every installed interpreter again
// (no stamps) and compares it with the embedded lock (npm: its pinned hash).
func VerifyInstalled(cacheDir string) ([]Verification, error) {
	if cacheDir == "" {
		var err error
		if cacheDir, err = DefaultCacheDir(); err != nil {
			return nil, err
		}
	}
	var out []Verification
	for _, v := range variants {
		p, err := pins(v)
		if err != nil {
			return nil, err
		}
		dir := variantDir(cacheDir, v)
		r := Verification{Interpreter: v, Dir: dir, SHA256: p.Outputs["python.wasm"]}
		if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err == nil {
			r.Installed = true
			r.Err = matchesLock(dir, p, "")
		}
		out = append(out, r)
	}
	r := Verification{Interpreter: NPM, Dir: filepath.Dir(npmPath(cacheDir)), SHA256: npmSHA256}
	if _, err := os.Stat(npmPath(cacheDir)); err == nil {
		r.Installed = true
		_, r.Err = verify(npmPath(cacheDir), npmSHA256, "")
	}
	return append(out, r), nil
}
