// Package numpytest runs numpy's own test suite (the tests of the pinned
// source tarball) inside the sandbox with the sci interpreter, under pytest
// and its dependencies from Debian's binary packages (pytest.lock). Each
// test file is a run of its own, so a trap or a limit costs one file; the
// report names every failure and error with its file and reason, and sums
// the counts per directory. The run fails on a failure not listed in
// expected_failures.txt, and on a listed test of a file it ran that did not
// fail. `make test-numpy` runs it; it is too long for `make test`.
package numpytest
