// Package numpytest runs numpy's and pandas' own test suites (the tests of
// the pinned source tarballs) inside the sandbox with the sci interpreter,
// under pytest and its dependencies from Debian's binary packages
// (pytest.lock). Each test file is a run of its own, so a trap or a limit
// costs one file; the report names every failure and error with its file and
// reason, and sums the counts per directory. A run fails on a failure not
// listed in its suite's expected failures (expected_failures.txt,
// expected_failures_pandas.txt), and on a listed test of a file it ran that
// did not fail. `make test-numpy` and `make test-pandas` run them; they are
// too long for `make test`.
package numpytest
