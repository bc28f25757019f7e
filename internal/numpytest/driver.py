# Runs pytest on a package's own tests (driver.py PACKAGE PYTEST-ARGS...:
# numpy's, pandas'), from its source tree mounted as the workspace (the cwd),
# against the interpreter's package (preloaded from the standard library's
# directory). Prints one JSON line last: the counts, each failure and error
# with a one-line reason, and the skips counted by reason. A test module
# that cannot be imported is one error.
import builtins
import importlib
import json
import os
import re
import sys
import types

import pytest

# pytest's tmp_path asks who owns the base directory; WASI has no uids.
if not hasattr(os, "getuid"):
    os.getuid = lambda: 0

# The test packages live in the source tree: each of the package's
# packages also looks there for what it does not have (its tests/
# subpackages).
package, args = sys.argv[1], sys.argv[2:]
for top, dirs, files in os.walk(package):
    dirs.sort()
    # tests/ packages are found through their parent's path; pytest
    # imports them (some skip at import, raising a BaseException).
    if "__init__.py" not in files or os.path.basename(top) == "tests":
        dirs[:] = []
        continue
    name = top.replace(os.sep, ".")
    try:
        mod = sys.modules.get(name) or importlib.import_module(name)
    except (Exception, pytest.skip.Exception):
        dirs[:] = []
        continue
    where = os.path.join(os.getcwd(), top)
    if hasattr(mod, "__path__") and where not in mod.__path__:
        mod.__path__.append(where)


# What a test module gets for `import ctypes` or `import mmap`, which WASI
# lacks (no libffi or dlopen; no mmap): test_multiarray, test_dtype,
# test_ufunc and others import them at the top but use them in a few tests
# only. A test that uses one skips, naming the reason, and the rest of the
# module runs. While the module is imported, a name taken from one (`from
# ctypes import c_double`, `hasattr(ctypes, "pythonapi")`) is a Missing,
# whose use in a test skips it.
ABSENT = {"ctypes": "no ctypes on WASI", "mmap": "no mmap on WASI"}
importing = False


class Absent(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        why = f"{ABSENT[self.__name__]} ({self.__name__}.{name})"
        if importing:
            return Missing(why)
        pytest.skip(why)


class Missing:
    def __init__(self, why):
        self._why = why

    def _skip(self, *args, **kwargs):
        pytest.skip(self._why)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        self._skip()

    # what tests do with ctypes' types: call, multiply into arrays, subclass
    __call__ = __mul__ = __rmul__ = __getitem__ = __iter__ = __mro_entries__ = _skip


def reason(report):
    """The one line that says why a test failed or errored."""
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        text = crash.message
    else:
        text = str(report.longrepr)
        # A collection error's text is a traceback whose E lines say why.
        why = [l[1:].strip() for l in text.splitlines() if l.startswith("E ")]
        text = why[-1] if why else text.strip()
    lines = text.strip().splitlines() or ["?"]
    return lines[0][:300]


class Report:
    def __init__(self):
        self.counts = {}
        self.problems = []
        self.skips = {}

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector):
        # Only the test module's own unconditional imports at its top get
        # the stand-ins: numpy's modules, and those the test module imports,
        # still find no ctypes or mmap, as they do in a run.
        # A module that guards its import (try: import ctypes / except
        # ImportError) gets the ImportError it expects.
        if not isinstance(collector, pytest.Module):
            return (yield)
        with open(collector.path, encoding="utf-8") as f:
            wanted = set(re.findall(r"^(?:import|from) +(ctypes|mmap)\b", f.read(), re.M))
        if not wanted:
            return (yield)
        global importing
        module, real = str(collector.path), builtins.__import__

        def stand_in(name, globals=None, locals=None, fromlist=(), level=0):
            if level == 0 and name in wanted and os.path.abspath((globals or {}).get("__file__") or "") == module:
                try:
                    return real(name, globals, locals, fromlist, level)
                except ImportError:
                    return Absent(name)
            return real(name, globals, locals, fromlist, level)

        builtins.__import__, importing = stand_in, True
        try:
            return (yield)
        finally:
            builtins.__import__, importing = real, False

    # capfd captures file descriptors 1 and 2 by dup(), which WASI lacks;
    # pytest's own capfd fails at setup and leaves its capture broken for
    # every later test of the run (hundreds of setup errors).
    @pytest.fixture
    def capfd(self):
        pytest.skip("no dup on WASI (capfd)")

    @pytest.fixture
    def capfdbinary(self):
        pytest.skip("no dup on WASI (capfdbinary)")

    def pytest_collectreport(self, report):
        if report.failed:
            self.problems.append(["ERROR", report.nodeid, reason(report)])

    def pytest_runtest_logreport(self, report):
        if report.failed and not hasattr(report, "wasxfail"):
            kind = "FAILED" if report.when == "call" else "ERROR"
            self.problems.append([kind, report.nodeid, report.when + ": " + reason(report)])
        elif report.skipped and isinstance(report.longrepr, tuple):
            why = report.longrepr[2].removeprefix("Skipped: ")
            self.skips[why] = self.skips.get(why, 0) + 1

    def pytest_terminal_summary(self, terminalreporter):
        for key in ("passed", "failed", "error", "skipped", "xfailed", "xpassed"):
            self.counts[key] = len(terminalreporter.stats.get(key, []))


report = Report()
code = pytest.main(["-q", "--continue-on-collection-errors", "-p", "no:cacheprovider", "-p", "no:faulthandler", "-p", "no:logging", "--capture=sys", "-o", "addopts=", "--import-mode=importlib",
                    "-W", "ignore::pytest.PytestUnraisableExceptionWarning"] + args, plugins=[report])
print()
print(json.dumps({"exit": int(code), **report.counts, "problems": report.problems, "skips": report.skips}))
