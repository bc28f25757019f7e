package assets

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// lock pins every input of build/build.sh; its hash names the cache entry,
// so a changed recipe never reuses an old build.
//
//go:embed build/interpreter.lock
var lock []byte

// WasmpyDir is where the wasmpy build for the committed lock file lives.
func WasmpyDir(cache string) string {
	h := sha256.Sum256(lock)
	return filepath.Join(cache, "interpreters", "wasmpy-"+hex.EncodeToString(h[:6]))
}

// SciDir is where the sci build (the wasmpy build with numpy) for the
// committed lock file lives.
func SciDir(cache string) string {
	h := sha256.Sum256(lock)
	return filepath.Join(cache, "interpreters", "wasmpy-sci-"+hex.EncodeToString(h[:6]))
}

// manifest is what build.sh writes beside its outputs.
type manifest struct {
	PythonVersion string            `json:"python_version"`
	Outputs       map[string]string `json:"outputs"`
	Preload       []string          `json:"preload"`
	Packages      []Package         `json:"packages"`
}

// loadBuild loads a wasmpy build directory, checking each output against
// the manifest written when it was built (see verify for stamps).
func loadBuild(dir, stamps string) (*Interpreter, error) {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
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
	return &Interpreter{Kind: Wasmpy, Version: m.PythonVersion, Wasm: wasm,
		SHA256: m.Outputs["python.wasm"], Stdlib: stdlib, StdlibSHA256: m.Outputs["python313.zip"],
		Preload: m.Preload, Packages: m.Packages}, nil
}
