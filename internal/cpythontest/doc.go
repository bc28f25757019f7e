// Package cpythontest runs CPython's own regression tests (Lib/test of the
// pinned source, from the interpreter build's work dir) inside the sandbox,
// one module at a time, beside a native build of the same source, and fails
// on a test that fails only in the sandbox unless expected_failures.txt
// says why. `make test` runs a fast subset; `make test-cpython` runs all.
package cpythontest
