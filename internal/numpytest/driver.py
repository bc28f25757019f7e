# Runs pytest on numpy's own tests, from numpy's source tree mounted as the
# workspace (the cwd), against the interpreter's numpy (preloaded from the
# standard library's directory). Prints one JSON line of counts last. A test
# module that cannot be imported here (test_io.py imports ctypes, which WASI
# lacks) is one error, and the directory's other modules still run.
import importlib
import json
import os
import sys

import pytest

# pytest's tmp_path asks who owns the base directory; WASI has no uids.
if not hasattr(os, "getuid"):
    os.getuid = lambda: 0

# The test packages live in the source tree: each numpy package also
# looks there for what it does not have (its tests/ subpackages).
for top, dirs, files in os.walk("numpy"):
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


class Counts:
    def __init__(self):
        self.counts = {}

    def pytest_terminal_summary(self, terminalreporter):
        for key in ("passed", "failed", "error", "skipped", "xfailed", "xpassed"):
            self.counts[key] = len(terminalreporter.stats.get(key, []))


counts = Counts()
code = pytest.main(["-q", "--continue-on-collection-errors", "-p", "no:cacheprovider", "-p", "no:faulthandler", "-p", "no:logging", "--capture=sys", "-o", "addopts=", "--import-mode=importlib",
                    "-W", "ignore::pytest.PytestUnraisableExceptionWarning"] + sys.argv[1:], plugins=[counts])
print()
print(json.dumps({"exit": int(code), **counts.counts}))
