package assets

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A release is one archive per build variant, named after the variant's
// cache entry (which hashes the lock): wasmpy-KEY.tar.gz and
// wasmpy-sci-KEY.tar.gz. Each holds one directory of that name with the
// build's python.wasm, python313.zip and manifest.json (the manifest build.sh
// wrote, with the files' sizes added). The SHA-256s a release is checked
// against are the lock's, embedded in this package: a binary installs only
// the interpreters its own lock pins, whoever serves them.

// Variants are the interpreter builds a release carries, in install order.
var variants = []string{Core, Sci}

// Variants lists the build variants a release carries: "core" (the
// default build) and "sci".
func Variants() []string { return slices.Clone(variants) }

// variantDir is the cache entry of a variant.
func variantDir(cache, variant string) string {
	if Canonical(variant) == Sci {
		return SciDir(cache)
	}
	return CoreDir(cache)
}

// ArchiveName is the file name of a variant's release archive for the
// embedded lock.
func ArchiveName(variant string) string {
	return filepath.Base(variantDir("", variant)) + ".tar.gz"
}

// releaseFiles are the files of a build, in archive order.
var releaseFiles = []string{"manifest.json", "python.wasm", "python313.zip"}

// Upper bounds on what an archive may hold: an archive whose headers claim
// more, or whose data runs longer, is refused before it fills a disk.
const (
	maxManifest = 1 << 20
	maxOutput   = 512 << 20 // python.wasm, python313.zip (sci's wasm is ~40 MiB)
	maxArchive  = 1 << 30   // compressed bytes of one download
)

// lockPins is what the embedded lock pins of a variant.
type lockPins struct {
	PythonVersion string
	Outputs       map[string]string // python.wasm, python313.zip: SHA-256
}

// pins reads the embedded lock's pins for variant.
func pins(variant string) (lockPins, error) {
	var l struct {
		PythonVersion string            `json:"python_version"`
		Outputs       map[string]string `json:"outputs"`
		Variants      map[string]struct {
			Outputs map[string]string `json:"outputs"`
		} `json:"variants"`
	}
	if err := json.Unmarshal(lock, &l); err != nil {
		return lockPins{}, fmt.Errorf("wasmpy: the embedded interpreter.lock: %w", err)
	}
	p := lockPins{PythonVersion: l.PythonVersion, Outputs: l.Outputs}
	if variant = Canonical(variant); variant != Core {
		p.Outputs = l.Variants[variant].Outputs
	}
	if p.Outputs["python.wasm"] == "" || p.Outputs["python313.zip"] == "" {
		return lockPins{}, fmt.Errorf("wasmpy: interpreter.lock pins no outputs for the %s interpreter", variant)
	}
	return p, nil
}

// LockOutputs returns the SHA-256s the embedded lock pins for a variant's
// python.wasm and python313.zip.
func LockOutputs(variant string) (wasm, stdlib string, err error) {
	p, err := pins(variant)
	if err != nil {
		return "", "", err
	}
	return p.Outputs["python.wasm"], p.Outputs["python313.zip"], nil
}

// ReleaseFile is one archive WriteRelease wrote.
type ReleaseFile struct {
	Variant string
	Path    string
	Size    int64
	SHA256  string
}

// WriteRelease packs the builds of every variant in cacheDir (what `make`
// built) into one archive each in dir, reproducibly: the same builds give
// the same bytes (fixed order, times, owners and modes; gzip with no name
// or time). It refuses a build whose outputs are not the lock's: a release
// carries only what the lock pins, since that is what setup checks. It also
// writes SHA256SUMS, the archives' hashes, for people.
func WriteRelease(cacheDir, dir string) ([]ReleaseFile, error) {
	if cacheDir == "" {
		var err error
		if cacheDir, err = DefaultCacheDir(); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out []ReleaseFile
	var sums strings.Builder
	for _, v := range variants {
		f, err := writeArchive(cacheDir, dir, v)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
		fmt.Fprintf(&sums, "%s  %s\n", f.SHA256, filepath.Base(f.Path))
	}
	if err := writeAtomic(filepath.Join(dir, "SHA256SUMS"), []byte(sums.String())); err != nil {
		return nil, err
	}
	return out, nil
}

func writeArchive(cacheDir, dir, variant string) (ReleaseFile, error) {
	p, err := pins(variant)
	if err != nil {
		return ReleaseFile{}, err
	}
	build := variantDir(cacheDir, variant)
	files := map[string][]byte{}
	for _, name := range releaseFiles[1:] {
		b, err := os.ReadFile(filepath.Join(build, name))
		if err != nil {
			return ReleaseFile{}, fmt.Errorf("wasmpy: release: the %s interpreter is not built (%w): run `make interpreter`", variant, unwrapPath(err))
		}
		if got, want := sum(b), p.Outputs[name]; got != want {
			return ReleaseFile{}, fmt.Errorf("wasmpy: release: %s/%s: sha256 %s, the lock's is %s: a release carries only what interpreter.lock pins (rebuild, or pin the new build with WASMPY_UPDATE_LOCK=1)", build, name, got, want)
		}
		files[name] = b
	}
	mb, err := os.ReadFile(filepath.Join(build, "manifest.json"))
	if err != nil {
		return ReleaseFile{}, fmt.Errorf("wasmpy: release: %s: %w", build, err)
	}
	var m map[string]any
	if err := json.Unmarshal(mb, &m); err != nil {
		return ReleaseFile{}, fmt.Errorf("wasmpy: release: %s/manifest.json: %w", build, err)
	}
	m["sizes"] = map[string]int{"python.wasm": len(files["python.wasm"]), "python313.zip": len(files["python313.zip"])}
	if files["manifest.json"], err = json.MarshalIndent(m, "", "  "); err != nil { // sorted keys
		return ReleaseFile{}, err
	}
	files["manifest.json"] = append(files["manifest.json"], '\n')

	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return ReleaseFile{}, err
	}
	tw := tar.NewWriter(zw)
	top := strings.TrimSuffix(ArchiveName(variant), ".tar.gz")
	epoch := time.Unix(0, 0).UTC()
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: top + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatUSTAR}); err != nil {
		return ReleaseFile{}, err
	}
	for _, name := range releaseFiles {
		b := files[name]
		h := &tar.Header{Typeflag: tar.TypeReg, Name: top + "/" + name, Mode: 0o644, Size: int64(len(b)), ModTime: epoch, Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(h); err != nil {
			return ReleaseFile{}, err
		}
		if _, err := tw.Write(b); err != nil {
			return ReleaseFile{}, err
		}
	}
	if err := tw.Close(); err != nil {
		return ReleaseFile{}, err
	}
	if err := zw.Close(); err != nil {
		return ReleaseFile{}, err
	}
	path := filepath.Join(dir, ArchiveName(variant))
	if err := writeAtomic(path, buf.Bytes()); err != nil {
		return ReleaseFile{}, err
	}
	return ReleaseFile{Variant: variant, Path: path, Size: int64(buf.Len()), SHA256: sum(buf.Bytes())}, nil
}
