"""Run one module of CPython's regression tests and report each test's outcome.

    python driver.py TESTS_DIR MODULE     (MODULE: test_json, test_asyncio.test_tasks)

TESTS_DIR holds the `test` package; it goes last on sys.path, so the
interpreter's own standard library is what is tested. The last line of
stdout is a JSON object: {"module", "outcomes": {test id: pass|fail|skip},
"reasons": {failed test id: the last line of its traceback}, "skipped" (why the whole module was), "error" (why it could not run),
"seconds"}; failures' tracebacks go to stderr. The same file runs in the
sandbox and under the native build, so the two are compared test by test.
"""
import io
import json
import os
import sys
import tempfile
import time
import types
import unittest


class Recorder(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.outcomes = {}

    def _set(self, test, outcome):
        # A subtest's failure fails its test; a test's pass never hides one.
        tid = test.id() if not isinstance(test, unittest.case._SubTest) else test.test_case.id()
        if self.outcomes.get(tid) != "fail":
            self.outcomes[tid] = outcome

    def addSuccess(self, test):
        super().addSuccess(test)
        self._set(test, "pass")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._set(test, "fail")

    def addError(self, test, err):
        super().addError(test, err)
        self._set(test, "fail")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None and not issubclass(err[0], unittest.SkipTest):
            self._set(subtest, "fail")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._set(test, "skip")

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._set(test, "skip")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._set(test, "fail")


def load(name):
    """The module's tests. A package whose __init__ skips the whole package
    on a platform without sockets (test_asyncio) is bypassed for the named
    submodule: the submodule says itself what it needs."""
    parent, _, _ = name.rpartition(".")
    if parent:
        pkg = "test." + parent
        try:
            __import__(pkg)
        except unittest.SkipTest:
            mod = types.ModuleType(pkg)
            root = os.path.dirname(sys.modules["test"].__file__)
            mod.__path__ = [os.path.join(root, *parent.split("."))]
            sys.modules[pkg] = mod
            setattr(sys.modules[pkg.rpartition(".")[0]], pkg.rpartition(".")[2], mod)
    return unittest.defaultTestLoader.loadTestsFromName("test." + name)


def import_tools_helper(support):
    """test.test_tools skips every module that imports it when there are no
    subprocesses (WASI), though test_argparse, test_getopt and test_optparse
    import it (through i18n_helper) for one test class that skips itself
    (requires_subprocess). Imported as if subprocesses existed, it lets the
    rest of those modules run; natively this changes nothing."""
    if support.has_subprocess_support:
        return
    support.has_subprocess_support = True
    try:
        import test.test_tools
    finally:
        support.has_subprocess_support = False


# Modules that skip themselves whole on WASI for want of sockets, when all
# they need is asyncio's event loop, which works in the sandbox without them.
LOOP_ONLY = {"test_asyncgen", "test_contextlib_async"}


def load_without_sockets(support, name):
    """Loads a LOOP_ONLY module as if sockets worked: its tests then run
    (natively this changes nothing)."""
    saved = support.has_socket_support
    support.has_socket_support = True
    try:
        return load(name)
    finally:
        support.has_socket_support = saved


def main():
    tests_dir, name = os.path.abspath(sys.argv[1]), sys.argv[2]
    sys.path.append(tests_dir)
    from test import support
    support.verbose = 0
    # As `python -m test -u all,-cpu,-largefile`: outside regrtest every
    # resource counts as enabled, and hashing 4 GiB takes the sandbox minutes.
    from test.libregrtest.utils import ALL_RESOURCES
    support.use_resources = [r for r in ALL_RESOURCES if r not in ("cpu", "largefile")]
    import_tools_helper(support)
    try:
        os.chdir(tempfile.mkdtemp(prefix="cpythontest-"))  # TESTFN lands here
    except OSError as e:  # no writable directory: tests that write fail
        print("driver: no temporary directory:", e, file=sys.stderr)
    report = {"module": name, "outcomes": {}, "reasons": {}, "skipped": None, "error": None}
    start = time.monotonic()
    try:
        suite = load_without_sockets(support, name) if name in LOOP_ONLY else load(name)
        result = Recorder()
        suite.run(result)
        report["outcomes"] = result.outcomes
        for test, text in result.errors + result.failures:
            print("FAIL:", test.id(), "\n", text, file=sys.stderr)
            lines = text.strip().splitlines()
            report["reasons"][test.id()] = lines[-1][:200] if lines else ""
    except unittest.SkipTest as e:
        report["skipped"] = str(e)
    except BaseException as e:  # a module that cannot load is one failure
        report["error"] = "%s: %s" % (type(e).__name__, e)
    report["seconds"] = round(time.monotonic() - start, 2)
    sys.stdout.flush()
    print("\n" + json.dumps(report))


main()
