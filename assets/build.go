package assets

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/wasmpy/wasmpy/internal/hostfile"
)

// lock pins every input of build/build.sh; a variant's share of it names
// the variant's cache entry, so a changed recipe never reuses an old build.
//
//go:embed build/interpreter.lock
var lock []byte

// CoreDir is where the core build for the committed lock file lives. Its
// name hashes the lock without the other variants' inputs and outputs, so
// pinning or rebuilding sci leaves the default's cache entry where it is.
// (The directory keeps the build's former name, wasmpy-, so that caches and
// release archives made before the rename still match.)
func CoreDir(cache string) string {
	return filepath.Join(cache, "interpreters", "wasmpy-"+lockKey(defaultLock(lock)))
}

// SciDir is where the sci build (the core build with numpy) for the
// committed lock file lives; the whole lock names it, since sci is built on
// every default input.
func SciDir(cache string) string {
	return filepath.Join(cache, "interpreters", "wasmpy-sci-"+lockKey(lock))
}

func lockKey(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:6])
}

// defaultLock is the lock as the default build sees it: without "variants"
// and the inputs marked with a "variant", compact with sorted keys. The lock
// is embedded and checked by TestDefaultLock; should it not parse, the whole
// file is the key.
func defaultLock(b []byte) []byte {
	var l map[string]any
	if json.Unmarshal(b, &l) != nil {
		return b
	}
	delete(l, "variants")
	if inputs, ok := l["inputs"].(map[string]any); ok {
		for name, in := range inputs {
			if e, ok := in.(map[string]any); ok && e["variant"] != nil {
				delete(inputs, name)
			}
		}
	}
	out, err := json.Marshal(l)
	if err != nil {
		return b
	}
	return out
}

// manifest is what build.sh writes beside its outputs.
type manifest struct {
	PythonVersion string            `json:"python_version"`
	Outputs       map[string]string `json:"outputs"`
	Preload       []string          `json:"preload"`
	Packages      []Package         `json:"packages"`
}

// loadBuild loads a build directory, checking each output against
// the manifest written when it was built (see verify for stamps).
func loadBuild(dir, stamps string) (*Interpreter, error) {
	b, err := hostfile.ReadFile(filepath.Join(dir, "manifest.json"), 1<<20)
	if err != nil {
		var he *hostfile.Error
		if errors.As(err, &he) && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("wasmpy: %w", err)
		}
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("wasmpy: %s/manifest.json: %w", dir, err)
	}
	wasm, err := verify(filepath.Join(dir, "python.wasm"), m.Outputs["python.wasm"], stamps)
	if err != nil {
		return nil, err
	}
	stdlib, err := verify(filepath.Join(dir, "python313.zip"), m.Outputs["python313.zip"], stamps)
	if err != nil {
		return nil, err
	}
	return &Interpreter{Kind: Core, Version: m.PythonVersion, Wasm: wasm,
		SHA256: m.Outputs["python.wasm"], Stdlib: stdlib, StdlibSHA256: m.Outputs["python313.zip"],
		Preload: m.Preload, Packages: m.Packages}, nil
}
