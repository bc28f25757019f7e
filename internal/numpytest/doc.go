// Package numpytest runs numpy's own test suite (the tests of the pinned
// source tarball) inside the sandbox with the sci interpreter, under pytest
// and its dependencies from Debian's binary packages (pytest.lock), and
// reports pass/fail counts per suite. `make test-numpy` runs it; it is too
// long for `make test`.
package numpytest
