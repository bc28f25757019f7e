"""wasmpy codegen test runner: runs a generated function's tests.

Runs inside the sandbox as an ordinary job. Input, one JSON object on stdin:

  {"function": str, "code": str, "tests": str, "docstring": str}

The function's code runs as function.py, the tests (unittest.TestCase
classes) as test_function.py, both as __main__ in one namespace, so the
tests call the function by name and the sandbox's import policy applies to
both. Each doctest example of the docstring (the signature's, written by the
user) is a test too. The report goes back with submit_result:

  {"load_error": str, "tests": [{"name", "source", "outcome", "message"}]}

outcome: passed, failed (an assertion), error (an exception), skipped.
"""
import doctest
import io
import json
import sys
import traceback
import unittest

MAX_MESSAGE = 2000


def clip(text):
    text = text.strip()
    return text if len(text) <= MAX_MESSAGE else "…" + text[-MAX_MESSAGE:]


class Recorder(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.records = []

    def record(self, test, outcome, message=""):
        name = test.id().rpartition(".")[0].rpartition(".")[2] + "." + test._testMethodName \
            if isinstance(test, unittest.TestCase) else str(test)
        self.records.append({"name": name, "source": "generated", "outcome": outcome, "message": clip(message)})

    def addSuccess(self, test):
        self.record(test, "passed")

    def addFailure(self, test, err):
        self.record(test, "failed", self._exc_info_to_string(err, test))

    def addError(self, test, err):
        self.record(test, "error", self._exc_info_to_string(err, test))

    def addSkip(self, test, reason):
        self.record(test, "skipped", reason)

    def addExpectedFailure(self, test, err):
        self.record(test, "passed", "expected failure")

    def addUnexpectedSuccess(self, test):
        self.record(test, "failed", "unexpected success")


def run_doctests(doc, scope, name):
    """One record per example; the examples share their globals, in order."""
    records = []
    examples = doctest.DocTestParser().get_examples(doc)
    globs = dict(scope)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for i, ex in enumerate(examples, 1):
        test = doctest.DocTest([ex], globs, name, "docstring", 0, doc)
        out = io.StringIO()
        result = runner.run(test, out=out.write, clear_globs=False)
        source = ex.source.strip().splitlines()[0]
        records.append({"name": "doctest %d: %s" % (i, source[:80]), "source": "doctest",
                        "outcome": "failed" if result.failed else "passed", "message": clip(out.getvalue())})
    return records


def main():
    req = json.loads(sys.stdin.read())
    scope = {"__name__": "__main__"}
    report = {"load_error": "", "tests": []}
    try:
        exec(compile(req["code"], "function.py", "exec"), scope)
    except BaseException:
        report["load_error"] = "loading the function failed:\n" + clip(traceback.format_exc())
        submit_result(report)
        return
    if req.get("docstring"):
        report["tests"].extend(run_doctests(req["docstring"], scope, req["function"]))
    if req.get("tests"):
        before = set(scope)
        try:
            exec(compile(req["tests"], "test_function.py", "exec"), scope)
        except BaseException:
            report["load_error"] = "loading the tests failed:\n" + clip(traceback.format_exc())
            submit_result(report)
            return
        cases = [v for k, v in scope.items() if k not in before
                 and isinstance(v, type) and issubclass(v, unittest.TestCase)]
        suite = unittest.TestSuite()
        loader = unittest.TestLoader()
        for case in cases:
            suite.addTests(loader.loadTestsFromTestCase(case))
        recorder = Recorder()
        suite.run(recorder)
        report["tests"].extend(recorder.records)
    submit_result(report)


main()
