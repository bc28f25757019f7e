"""@wasmpy.define against the fake LLM, through the wasmpy CLI and a real
`wasmpy serve`."""
import asyncio
import contextlib
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import wasmpy  # noqa: E402
from support import FakeLLM, Serve, binary, py_reply  # noqa: E402

SLUG_TESTS = '''import unittest


class TestSlugify(unittest.TestCase):
    def test_words(self):
        # Arrange
        title = "Hello World"
        # Act
        result = slugify(title)
        # Assert
        self.assertEqual(result, "hello-world")

    def test_punctuation(self):
        self.assertEqual(slugify("A, b!"), "a-b")'''

SLUG_GOOD = '''import re


def slugify(title: str) -> str:
    words = re.findall(r"[a-z0-9]+", title.lower())
    return "-".join(words)'''


class DefineTest(unittest.TestCase):
    def setUp(self):
        os.environ.setdefault("WASMPY_BIN", binary())
        self.llm = FakeLLM()
        self.addCleanup(self.llm.close)
        self.cache = tempfile.TemporaryDirectory(prefix="wasmpy-define-")
        self.addCleanup(self.cache.cleanup)

    def options(self, **kw):
        opts = dict(llm_base_url=self.llm.url, model="test-model", cache_dir=self.cache.name)
        opts.update(kw)
        return opts

    def test_generates_once_then_runs_in_the_sandbox(self):
        self.llm.enqueue(py_reply("def add(a: int, b: int) -> int:\n    return a + b"))

        @wasmpy.define(**self.options())
        def add(a: int, b: int) -> int:
            """Adds two integers."""

        self.assertEqual(add(2, 3), 5)
        self.assertEqual(add(b=10, a=-1), 9)
        self.assertEqual(len(self.llm.requests), 1, "the code is generated once")
        user = self.llm.requests[0]["messages"][1]["content"]
        self.assertIn("def add(a: int, b: int) -> int:", user)
        self.assertIn("Adds two integers.", user)
        self.assertNotIn("return", user, "the signature and docstring are all the model sees")
        self.assertEqual(self.llm.requests[0]["model"], "test-model")
        self.assertIn("def add(a: int, b: int) -> int:", add.code)
        self.assertEqual(add.__name__, "add")
        self.assertEqual(add.__doc__, "Adds two integers.")

        # Another process (here: another decoration) finds it in the cache.
        @wasmpy.define(**self.options())
        def add(a: int, b: int) -> int:  # noqa: F811
            """Adds two integers."""

        self.assertEqual(add(1, 1), 2)
        self.assertEqual(len(self.llm.requests), 1, "the on-disk cache answered")
        self.assertTrue(add.report["cached"])

    def test_tests_drive_retries(self):
        self.llm.enqueue(py_reply(SLUG_GOOD.replace('"-"', '"_"'), SLUG_TESTS), py_reply(SLUG_GOOD, SLUG_TESTS))

        @wasmpy.define(**self.options(tests=True, min_quality="complexity=3,hints"))
        def slugify(title: str) -> str:
            """Lowercase ASCII words of the title joined by hyphens.

            >>> slugify("Hello, World!")
            'hello-world'
            """

        err = io.StringIO()
        slugify.debug = True
        with contextlib.redirect_stderr(err):
            self.assertEqual(slugify("Ready, Set, Go"), "ready-set-go")
        report = slugify.report
        self.assertEqual([a["outcome"] for a in report["attempts"]], ["tests_failed", "ok"])
        self.assertEqual([t["name"] for t in report["tests"]],
                         ["doctest 1: slugify(\"Hello, World!\")", "TestSlugify.test_punctuation", "TestSlugify.test_words"])
        self.assertTrue(all(t["outcome"] == "passed" for t in report["tests"]))
        self.assertEqual(report["quality"]["tests_passed"], 3)
        self.assertIn("3 of 3 tests failed", self.llm.requests[1]["messages"][-1]["content"])
        shown = err.getvalue()
        self.assertIn("# --- slugify: generated code ---", shown)
        self.assertIn("attempt 1 (llm): tests_failed", shown)
        self.assertIn("test TestSlugify.test_words: passed", shown)

    def test_bad_arguments_ask_nothing(self):
        @wasmpy.define(**self.options())
        def area(width: float, height: float) -> float:
            """The area of a rectangle."""

        with self.assertRaises(wasmpy.BadArguments) as cm:
            area(1, 2, depth=3)
        self.assertIsInstance(cm.exception, TypeError)
        self.assertIn("unexpected keyword argument 'depth'", str(cm.exception))
        with self.assertRaises(TypeError):
            area(1, {1, 2})  # a set is not JSON
        self.assertEqual(self.llm.requests, [])

    def test_generation_failed(self):
        self.llm.enqueue(py_reply("import os\ndef f(x):\n    return x"))

        @wasmpy.define(**self.options(attempts=1))
        def f(x: int) -> int:
            """Identity."""

        with self.assertRaises(wasmpy.GenerationFailed) as cm:
            f(1)
        self.assertEqual(cm.exception.kind, "invalid")
        self.assertIn("import of 'os' is not allowed", str(cm.exception.record["attempts"][0]["findings"]))

    def test_llm_failure(self):
        self.llm.enqueue_error(401, "bad key")

        @wasmpy.define(**self.options())
        def f(x: int) -> int:
            """Identity."""

        with self.assertRaises(wasmpy.GenerationFailed) as cm:
            f(1)
        self.assertEqual(cm.exception.kind, "llm")
        self.assertIn("bad key", str(cm.exception))

    def test_errors_of_later_calls(self):
        self.llm.enqueue(py_reply("def inverse(x: float) -> float:\n    return 1 / x"))

        @wasmpy.define(**self.options(timeout=5))
        def inverse(x: float) -> float:
            """1 / x."""

        self.assertEqual(inverse(4), 0.25)
        with self.assertRaises(wasmpy.GuestException) as cm:
            inverse(0)
        self.assertEqual(cm.exception.type, "ZeroDivisionError")

    def test_async(self):
        self.llm.enqueue(py_reply("def shout(s: str) -> str:\n    return s.upper() + '!'"))

        @wasmpy.define(**self.options())
        async def shout(s: str) -> str:
            """Upper case, with an exclamation mark."""

        async def main():
            return await asyncio.gather(shout("a"), shout("b"))

        self.assertEqual(asyncio.run(main()), ["A!", "B!"])
        self.assertEqual(len(self.llm.requests), 1)
        self.assertNotIn("async", self.llm.requests[0]["messages"][1]["content"])

    def test_options_checked(self):
        with self.assertRaises(ValueError):
            wasmpy.define(style="fancy")
        with self.assertRaises(ValueError):
            wasmpy.define(timeout=0)


class DefineOnServiceTest(unittest.TestCase):
    """With a client, generation and calls both go to `wasmpy serve`
    (POST /def with the service's LLM, then POST /exec): no local wasmpy
    binary is needed, and the generation is recorded like any run."""

    @classmethod
    def setUpClass(cls):
        cls.llm = FakeLLM()
        cls.serve = Serve(extra=["--llm-base-url", cls.llm.url, "--llm-model", "m"])

    @classmethod
    def tearDownClass(cls):
        cls.serve.close()
        cls.llm.close()

    def test_generates_and_calls_on_the_service(self):
        self.llm.enqueue(py_reply("def mul(a: int, b: int) -> int:\n    return a * b"))
        asked = len(self.llm.requests)
        client = wasmpy.Client(self.serve.url, token=self.serve.token)
        saved = os.environ.pop("WASMPY_BIN", None)
        path = os.environ.get("PATH", "")
        os.environ["PATH"] = ""  # no wasmpy to find
        try:
            @wasmpy.define(client=client, binary="/nonexistent/wasmpy")
            def mul(a: int, b: int) -> int:
                """The product."""

            self.assertEqual(mul(6, 7), 42)  # generated and called by the service
            self.assertEqual(mul(3, 3), 9)  # called by the service
            with self.assertRaises(wasmpy.BadArguments):
                mul(1, 2, 3)
        finally:
            os.environ["PATH"] = path
            if saved is not None:
                os.environ["WASMPY_BIN"] = saved
        self.assertEqual(len(self.llm.requests), asked + 1, "generated once")
        self.assertIn("def mul(a: int, b: int) -> int:", self.llm.requests[-1]["messages"][1]["content"])
        self.assertIn("return a * b", mul.code)
        prov = mul.report["provenance"]
        self.assertEqual(prov["kind"], "def")
        self.assertEqual(prov["outcome"], "ok")
        self.assertEqual(client._request("GET", "/executions/" + prov["execution_id"])["kind"], "def")

    def test_a_failed_generation_raises(self):
        self.llm.enqueue(py_reply("def div(a: int, b: int) -> float:\n    return a / 0"))
        client = wasmpy.Client(self.serve.url, token=self.serve.token)

        @wasmpy.define(client=client, attempts=1)
        def div(a: int, b: int) -> float:
            """a divided by b."""

        with self.assertRaises(wasmpy.GenerationFailed) as cm:
            div(1, 2)
        self.assertEqual(cm.exception.kind, "exception")


if __name__ == "__main__":
    unittest.main()
