package packages_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/wasmpy/wasmpy/internal/testing/wheeltest"
	"github.com/wasmpy/wasmpy/packages"
)

// A set file is outside input: Open and Mount refuse or serve it, never
// panic, and what they serve stays inside the set.
func FuzzOpen(f *testing.F) {
	seed := filepath.Join(f.TempDir(), "seed.zip")
	wheeltest.Zip(f, seed, map[string][]byte{packages.ManifestName: []byte(`{"format":"` + packages.Format + `"}`), "m/__init__.py": []byte("x = 1")})
	data, err := os.ReadFile(seed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte("PK\x05\x06"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "set.zip")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := packages.Open(p)
		if err != nil {
			return
		}
		site, err := packages.Mount(s)
		if err != nil {
			return
		}
		fs.WalkDir(site, ".", func(name string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				fs.ReadFile(site, name)
			}
			return nil
		})
	})
}

var errNoSandbox = errors.New("no sandbox while fuzzing")

func FuzzWheel(f *testing.F) {
	dir := f.TempDir()
	p := wheeltest.Wheel(f, "../testdata/packages/tinyvec", dir, "tinyvec-1.2.0-py3-none-any.whl")
	data, err := os.ReadFile(p)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "w-1.0-py3-none-any.whl")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		// Build fails before compiling anything unless the wheel is whole;
		// a whole one needs a sandbox, which the fuzzer does not give.
		_, _, err := packages.Build(t.Context(), packages.BuildOptions{Inputs: []string{p},
			Python: func(_ context.Context, _ string, _ []byte) ([]byte, error) { return nil, errNoSandbox }})
		if err == nil {
			t.Fatal("built without compiling")
		}
	})
}

func FuzzSatisfy(f *testing.F) {
	f.Add("sympy>=1.11,<2")
	f.Add("python_dateutil[tz]~=2.8")
	dists := []packages.Distribution{{Name: "sympy", Version: "1.11.1"}, {Name: "python-dateutil", Version: "2.9.0.post0"}}
	f.Fuzz(func(t *testing.T, req string) {
		d, err := packages.Satisfy(req, dists)
		if err == nil && d != nil && !bytes.Contains([]byte("sympy python-dateutil"), []byte(d.Name)) {
			t.Fatalf("satisfied by %v", d)
		}
	})
}
