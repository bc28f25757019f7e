// Package wheeltest makes wheels for tests from the trees in
// testdata/packages: real zips with a RECORD that is right, until a test
// changes a file after Record.
package wheeltest

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Files reads the tree at dir: slash path -> contents.
func Files(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// Record adds the RECORD of files to the one *.dist-info among them.
func Record(t testing.TB, files map[string][]byte) {
	t.Helper()
	var info string
	for name := range files {
		if top, _, _ := strings.Cut(name, "/"); strings.HasSuffix(top, ".dist-info") {
			info = top
		}
	}
	if info == "" {
		t.Fatal("wheeltest: no .dist-info")
	}
	var b strings.Builder
	for _, name := range sorted(files) {
		sum := sha256.Sum256(files[name])
		fmt.Fprintf(&b, "%s,sha256=%s,%d\n", name, base64.RawURLEncoding.EncodeToString(sum[:]), len(files[name]))
	}
	fmt.Fprintf(&b, "%s/RECORD,,\n", info)
	files[info+"/RECORD"] = []byte(b.String())
}

// Zip writes files as a zip at path.
func Zip(t testing.TB, path string, files map[string][]byte) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, name := range sorted(files) {
		w, err := zw.Create(name)
		if err == nil {
			_, err = w.Write(files[name])
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// Wheel writes the tree at dir as a wheel named name in out, and returns its path.
func Wheel(t testing.TB, dir, out, name string) string {
	t.Helper()
	files := Files(t, dir)
	Record(t, files)
	p := filepath.Join(out, name)
	Zip(t, p, files)
	return p
}

func sorted(files map[string][]byte) []string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
