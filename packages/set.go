package packages

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
)

// maxSetSize bounds a set file: it is held in memory while mounted.
const maxSetSize = 1 << 30

// Set is a package set read from its file and checked.
type Set struct {
	Path     string // as given
	SHA256   string // of the file: identifies the set in results and provenance
	Manifest Manifest

	data []byte
	zip  *zip.Reader
}

// Name is the set's file name, without its directory.
func (s *Set) Name() string { return filepath.Base(s.Path) }

// Open reads a set and checks what Build guarantees, since the file may
// come from anywhere: a readable zip with a manifest, every entry a
// regular file at a safe path, no native code, nothing that shadows the
// standard library. A refused set is an *Error.
func Open(path string) (*Set, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, errorf(path, "%v", unwrapPath(err))
	}
	if fi.IsDir() {
		return nil, errorf(path, "a directory, not a package set (build one with `wasmpy pkg build`)")
	}
	data, err := readHostFile(path, maxSetSize)
	if err != nil {
		return nil, err
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, errorf(path, "not a package set: not a readable zip (%v)", err)
	}
	sum := sha256.Sum256(data)
	s := &Set{Path: path, SHA256: hex.EncodeToString(sum[:]), data: data, zip: zr}
	seen := map[string]bool{}
	for _, f := range zr.File {
		if why := checkFile(f.Name); why != "" {
			return nil, errorf(path, "entry %q: %s", f.Name, why)
		}
		switch {
		case !f.Mode().IsRegular():
			return nil, errorf(path, "entry %q: not a regular file", f.Name)
		case f.Method != zip.Store && f.Method != zip.Deflate:
			return nil, errorf(path, "entry %q: unsupported compression method %d", f.Name, f.Method)
		case f.UncompressedSize64 > maxFileSize:
			return nil, errorf(path, "entry %q: larger than %d MiB", f.Name, maxFileSize>>20)
		case seen[f.Name]:
			return nil, errorf(path, "entry %q appears twice", f.Name)
		}
		seen[f.Name] = true
	}
	if !seen[ManifestName] {
		return nil, errorf(path, "not a package set: no %s (build one with `wasmpy pkg build`)", ManifestName)
	}
	raw, err := readEntry(fileOf(zr, ManifestName))
	if err != nil {
		return nil, errorf(path, "%s: %v", ManifestName, err)
	}
	if err := json.Unmarshal(raw, &s.Manifest); err != nil {
		return nil, errorf(path, "%s: %v", ManifestName, err)
	}
	if s.Manifest.Format != Format {
		return nil, errorf(path, "%s: format %q, want %q", ManifestName, s.Manifest.Format, Format)
	}
	return s, nil
}

func fileOf(zr *zip.Reader, name string) *zip.File {
	for _, f := range zr.File {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// Modules lists the top-level import names of the set's files.
func (s *Set) Modules() []string {
	files := map[string][]byte{}
	for _, f := range s.zip.File {
		files[f.Name] = nil
	}
	return modules(files)
}
