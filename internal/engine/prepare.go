package engine

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"

	"github.com/wasmpy/wasmpy/assets"
	"github.com/wasmpy/wasmpy/internal/fuel"
	"github.com/wasmpy/wasmpy/internal/wasmbin"
)

// prepareVersion changes whenever prepare would make different bytes.
const prepareVersion = "3"

// form is what prepare makes of the interpreter.
type form uint8

const (
	// asBuilt is the interpreter as built: nothing counts or stops it but
	// its engine (wazero's unmetered runs).
	asBuilt form = iota
	// metered is instrumented for fuel (fuel.Instrument), refuelling
	// through refuelImport: runs with a budget, and wazero's runs.
	metered
	// checked checks a stop flag the host sets from any thread
	// (fuel.InstrumentChecks): wasmtime's runs without a budget.
	checked
)

func (f form) String() string { return [...]string{"as-built", "metered", "checked"}[f] }

// prepare returns the module to compile: the interpreter without its active
// data segments when runs start from a snapshot, and instrumented for fuel
// when metered. The result depends only on the verified interpreter, so it
// is cached, with its SHA-256, to spare every process the work.
func (e *Engine) prepare(cacheDir string) ([]byte, error) {
	if e.metered {
		return e.prepareAs(cacheDir, metered)
	}
	return e.prepareAs(cacheDir, asBuilt)
}

// prepareAs is prepare, in form f.
func (e *Engine) prepareAs(cacheDir string, f form) ([]byte, error) {
	var path string
	if cacheDir != "" {
		// (A metered form's key is what it was before the checked form,
		// "true": caches made since stay valid.)
		key := sha256.Sum256(fmt.Appendf(nil, "%s %s %s %s %s", e.interp.SHA256, e.interp.Kind, f.key(), prepareVersion, fuel.GlobalName))
		path = filepath.Join(cacheDir, "prepared", fmt.Sprintf("%x.wasm", key[:12]))
		if b, err := os.ReadFile(path); err == nil && len(b) > sha256.Size {
			if sum := sha256.Sum256(b[sha256.Size:]); bytes.Equal(sum[:], b[:sha256.Size]) {
				return b[sha256.Size:], nil
			}
		}
	}
	wasm := e.interp.Wasm
	if e.interp.Kind == assets.Core {
		var err error
		if wasm, _, err = wasmbin.DropActiveData(wasm); err != nil {
			return nil, fmt.Errorf("wasmpy: interpreter: %w", err)
		}
	}
	var err error
	switch f {
	case metered:
		if wasm, err = fuel.Instrument(wasm, &refuelImport); err != nil {
			return nil, fmt.Errorf("wasmpy: metering the interpreter: %w", err)
		}
	case checked:
		if wasm, err = fuel.InstrumentChecks(wasm); err != nil {
			return nil, fmt.Errorf("wasmpy: adding stop checks to the interpreter: %w", err)
		}
	}
	if path != "" {
		sum := sha256.Sum256(wasm)
		// A cache that cannot be written costs the next process time, nothing else.
		_ = writeFileAtomic(path, append(sum[:], wasm...))
	}
	return wasm, nil
}

// key is the form's part of the cache key.
func (f form) key() string {
	switch f {
	case asBuilt:
		return "false"
	case metered:
		return "true"
	}
	return f.String() + " " + checkedVersion + " " + fuel.StopMemoryName
}

// checkedVersion changes whenever the checked form's instrumentation does
// (2: atomic loads of the flag).
const checkedVersion = "2"

// writeFileAtomic writes b to path so readers see the old file or the new
// one, never a part.
func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
