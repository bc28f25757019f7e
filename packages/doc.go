// Package packages builds and checks package sets: the pure-Python
// third-party code a sandbox may import, assembled ahead of time from
// wheels and site-packages-like directories, and mounted read-only in the
// guest's site-packages.
//
// A set is a zip laid out as an installed site-packages: every module's
// source beside its bytecode in __pycache__ (an unchecked-hash .pyc made by
// the sandbox's own interpreter), the distributions' *.dist-info or
// *.egg-info (so importlib.metadata works), and a manifest,
// wasmpy-packages.json, naming each input with its SHA-256 and each
// distribution with its version. Entries are stored uncompressed, sorted,
// with one fixed date: the same inputs give the same bytes, and the guest
// reads a file straight out of the set.
//
//	set, err := packages.Build(ctx, packages.BuildOptions{Inputs: []string{"six-1.17.0-py3-none-any.whl"}, Compile: compile})
//	err = os.WriteFile("six.zip", set.Zip, 0o644)
//	s, err := packages.Open("six.zip") // what --packages does: checks it all again
//	site, err := packages.Mount(s)      // an fs.FS of the guest's site-packages
package packages

import "fmt"

// Error is a refused input or set: which file, and why. Nothing of a build
// or a mount that meets one is used.
type Error struct {
	File   string // the input, set or entry at fault
	Reason string
}

func (e *Error) Error() string { return fmt.Sprintf("wasmpy: %s: %s", e.File, e.Reason) }

func errorf(file, format string, args ...any) *Error {
	return &Error{File: file, Reason: fmt.Sprintf(format, args...)}
}
