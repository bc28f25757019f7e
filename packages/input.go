package packages

import (
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/wasmpy/wasmpy/internal/hostfile"
)

// Bounds on what an input may unpack to: a zip bomb meets them, a real
// distribution does not.
const (
	maxFileSize  = 256 << 20
	maxInputSize = 1 << 30
)

// input is one wheel or directory, read and checked.
type input struct {
	Info
	files map[string][]byte // set-relative path -> contents
}

// Info names an input of a set: its file's base name, its kind (wheel or
// dir) and its SHA-256 (of the wheel's bytes; of a directory, the SHA-256
// of its sorted "path NUL sha256-hex LF" lines).
type Info struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	SHA256 string `json:"sha256"`
}

// readInput reads a wheel (a file) or a site-packages-like directory.
func readInput(p string) (*input, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, errorf(p, "%v", unwrapPath(err))
	}
	if fi.IsDir() {
		return readDir(p)
	}
	return readWheel(p)
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// readDir reads a directory laid out as site-packages (what `pip install
// --target DIR` or a Debian package's dist-packages holds), or a package
// itself (a directory with an __init__.py), which the set holds under the
// directory's name. Bytecode is left out: the set gets its own. Links are
// refused: a set holds regular files only, and a link could lead outside
// the directory.
func readDir(dir string) (*input, error) {
	name := filepath.Base(filepath.Clean(dir))
	in := &input{Info: Info{Name: name, Kind: "dir"}, files: map[string][]byte{}}
	prefix := ""
	if fi, err := os.Stat(filepath.Join(dir, "__init__.py")); err == nil && fi.Mode().IsRegular() {
		prefix = name + "/"
	}
	total := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return errorf(p, "%v", unwrapPath(err))
		}
		rel, _ := filepath.Rel(dir, p)
		rel = prefix + filepath.ToSlash(rel)
		switch {
		case p == dir:
			return nil
		case d.IsDir() && d.Name() == "__pycache__":
			return filepath.SkipDir
		case d.IsDir():
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			return errorf(p, "a symbolic link: a package set holds regular files only")
		case !d.Type().IsRegular():
			return errorf(p, "not a regular file")
		case strings.HasSuffix(rel, ".pyc") || strings.HasSuffix(rel, ".pyo"):
			return nil
		}
		if why := checkFile(rel); why != "" {
			return errorf(p, "%s", why)
		}
		data, err := readBounded(p)
		if err != nil {
			return err
		}
		if total += len(data); total > maxInputSize {
			return errorf(dir, "more than %d MiB of files", maxInputSize>>20)
		}
		in.files[rel] = data
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(in.files) == 0 {
		return nil, errorf(dir, "no files")
	}
	h := sha256.New()
	for _, rel := range sortedKeys(in.files) {
		sum := sha256.Sum256(in.files[rel])
		fmt.Fprintf(h, "%s\x00%x\n", rel, sum)
	}
	in.SHA256 = hex.EncodeToString(h.Sum(nil))
	return in, nil
}

func readBounded(p string) ([]byte, error) {
	return readHostFile(p, maxFileSize)
}

// readHostFile reads the regular file at p, of at most max bytes (see
// internal/hostfile: a FIFO, a device or a file past max is refused
// before a byte is read).
func readHostFile(p string, max int64) ([]byte, error) {
	data, err := hostfile.ReadFile(p, max)
	var he *hostfile.Error
	if errors.As(err, &he) {
		return nil, errorf(p, "%s", he.Reason)
	}
	if err != nil {
		return nil, errorf(p, "%v", err)
	}
	return data, nil
}

// readWheel reads a wheel and checks every file against its RECORD.
func readWheel(p string) (*input, error) {
	raw, err := readHostFile(p, maxInputSize)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	in := &input{Info: Info{Name: filepath.Base(p), Kind: "wheel", SHA256: hex.EncodeToString(sum[:])}, files: map[string][]byte{}}
	zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		return nil, errorf(p, "not a wheel: not a readable zip (%v)", err)
	}
	files := map[string][]byte{}
	total := 0
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		if why := checkPath(f.Name); why != "" {
			return nil, errorf(p, "entry %q: %s", f.Name, why)
		}
		if !f.Mode().IsRegular() {
			return nil, errorf(p, "entry %q: not a regular file (a link?)", f.Name)
		}
		if _, dup := files[f.Name]; dup {
			return nil, errorf(p, "entry %q appears twice", f.Name)
		}
		data, err := readEntry(f)
		if err != nil {
			return nil, errorf(p, "entry %q: %v", f.Name, err)
		}
		if total += len(data); total > maxInputSize {
			return nil, errorf(p, "unpacks to more than %d MiB", maxInputSize>>20)
		}
		files[f.Name] = data
	}
	record, err := wheelRecord(p, files)
	if err != nil {
		return nil, err
	}
	for name, data := range files {
		if err := record.check(p, name, data); err != nil {
			return nil, err
		}
		// A wheel's name.data/purelib and platlib install beside the
		// packages; its scripts, headers and data are not importable.
		if top, rest, _ := strings.Cut(name, "/"); strings.HasSuffix(top, ".data") {
			kind, rel, _ := strings.Cut(rest, "/")
			if kind != "purelib" && kind != "platlib" {
				continue
			}
			name = rel
		}
		if strings.HasSuffix(name, ".pyc") || strings.HasSuffix(name, ".pyo") {
			continue
		}
		if why := checkFile(name); why != "" {
			return nil, errorf(p, "%s: %s", name, why)
		}
		if _, dup := in.files[name]; dup {
			return nil, errorf(p, "%s appears twice (once under .data)", name)
		}
		in.files[name] = data
	}
	for name := range record.entries {
		if _, ok := files[name]; !ok {
			return nil, errorf(p, "%s is listed in RECORD but not in the wheel", name)
		}
	}
	return in, nil
}

func readEntry(f *zip.File) ([]byte, error) {
	if f.UncompressedSize64 > maxFileSize {
		return nil, fmt.Errorf("larger than %d MiB", maxFileSize>>20)
	}
	r, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("larger than %d MiB", maxFileSize>>20)
	}
	return data, nil
}

// record is a wheel's RECORD: path -> "algo=urlsafe-base64-digest".
type record struct {
	path    string // of RECORD itself
	entries map[string]string
}

// wheelRecord finds and parses the one *.dist-info/RECORD of a wheel.
func wheelRecord(wheel string, files map[string][]byte) (*record, error) {
	var found []string
	for name := range files {
		if top, rest, _ := strings.Cut(name, "/"); strings.HasSuffix(top, ".dist-info") && rest == "RECORD" {
			found = append(found, name)
		}
	}
	if len(found) != 1 {
		return nil, errorf(wheel, "not a wheel: want one *.dist-info/RECORD, found %d", len(found))
	}
	rec := &record{path: found[0], entries: map[string]string{}}
	rows, err := csv.NewReader(bytes.NewReader(files[rec.path])).ReadAll()
	if err != nil {
		return nil, errorf(wheel, "%s: %v", rec.path, err)
	}
	for _, row := range rows {
		if len(row) < 2 || row[0] == "" {
			continue
		}
		rec.entries[row[0]] = row[1]
	}
	return rec, nil
}

// check verifies one file of the wheel against its RECORD line. RECORD
// itself and its signatures carry no hash.
func (r *record) check(wheel, name string, data []byte) error {
	dir := path.Dir(r.path)
	if name == r.path || name == dir+"/RECORD.jws" || name == dir+"/RECORD.p7s" {
		return nil
	}
	want, ok := r.entries[name]
	if !ok {
		return errorf(wheel, "%s is not listed in RECORD", name)
	}
	algo, digest, _ := strings.Cut(want, "=")
	var h hash.Hash
	switch algo {
	case "sha256":
		h = sha256.New()
	case "sha384":
		h = sha512.New384()
	case "sha512":
		h = sha512.New()
	default:
		return errorf(wheel, "%s: RECORD gives no sha256 hash (%q)", name, want)
	}
	h.Write(data)
	if got := base64.RawURLEncoding.EncodeToString(h.Sum(nil)); got != strings.TrimRight(digest, "=") {
		return errorf(wheel, "%s: RECORD hash mismatch (RECORD says %s=%s, the file has %s=%s)", name, algo, digest, algo, got)
	}
	return nil
}

// readMetadata finds the distributions an input holds, from their
// METADATA (dist-info) or PKG-INFO (egg-info).
func (in *input) distributions() ([]Distribution, error) {
	var ds []Distribution
	for _, name := range sortedKeys(in.files) {
		top, rest, _ := strings.Cut(name, "/")
		isMeta := strings.HasSuffix(top, ".dist-info") && rest == "METADATA" ||
			strings.HasSuffix(top, ".egg-info") && (rest == "PKG-INFO" || rest == "")
		if !isMeta {
			continue
		}
		d := Distribution{Input: in.Name}
		sc := bufio.NewScanner(bytes.NewReader(in.files[name]))
		for sc.Scan() {
			line := sc.Text()
			if line == "" {
				break // the headers end; the description follows
			}
			if k, v, ok := strings.Cut(line, ":"); ok {
				switch strings.ToLower(k) {
				case "name":
					d.Name = strings.TrimSpace(v)
				case "version":
					d.Version = strings.TrimSpace(v)
				}
			}
		}
		if d.Name == "" || d.Version == "" {
			return nil, errorf(in.Name, "%s: no Name or Version", name)
		}
		ds = append(ds, d)
	}
	return ds, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
