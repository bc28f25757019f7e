"""wasmpy.run and wasmpy.Client over both transports: the CLI and a real
`wasmpy serve`."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import wasmpy  # noqa: E402
from support import Serve, binary  # noqa: E402

serve = None


def setUpModule() -> None:
    global serve
    os.environ.setdefault("WASMPY_BIN", binary())
    serve = Serve()


def tearDownModule() -> None:
    if serve is not None:
        serve.close()


class Transports:
    """The same checks on each transport; exec_() is the transport's."""

    def exec_(self, code, **kw):  # pragma: no cover - overridden
        raise NotImplementedError

    def test_output_and_stdout(self):
        r = self.exec_("print('hi')\nsubmit_result({'n': 6 * 7})")
        self.assertTrue(r.ok)
        self.assertEqual(r.stdout, "hi\n")
        self.assertEqual(r.output, {"n": 42})
        self.assertIsNone(r.error)
        self.assertGreater(r.duration_ms, 0)
        self.assertIn("stdout", r.record)

    def test_stdin(self):
        self.assertEqual(self.exec_("submit_result(input().upper())", stdin="shout\n").output, "SHOUT")

    def test_exception_carries_the_record(self):
        with self.assertRaises(wasmpy.GuestException) as cm:
            self.exec_("print('before')\nraise ValueError('bad value')")
        e = cm.exception
        self.assertEqual(e.type, "ValueError")
        self.assertIn("bad value", str(e))
        self.assertIn("ValueError: bad value", e.traceback)
        self.assertEqual(e.result.stdout, "before\n")
        self.assertIsNotNone(e.record)
        self.assertIsInstance(e, wasmpy.RunError)

    def test_timeout(self):
        with self.assertRaises(wasmpy.Timeout) as cm:
            self.exec_("while True:\n    pass", timeout=0.3)
        self.assertEqual(cm.exception.error["kind"], "timeout")

    def test_memory_limit(self):
        with self.assertRaises(wasmpy.MemoryLimit):
            self.exec_("x = bytearray(512 * 1024 * 1024)", memory="64MiB")

    def test_syntax_error(self):
        with self.assertRaises(wasmpy.GuestSyntaxError):
            self.exec_("def (:")

    def test_exit(self):
        with self.assertRaises(wasmpy.Exit):
            self.exec_("import sys\nsys.exit(3)")

    def test_check_false_returns_the_failure(self):
        r = self.exec_("raise KeyError('k')", check=False)
        self.assertFalse(r.ok)
        self.assertEqual(r.error["kind"], "exception")


class CLITransport(Transports, unittest.TestCase):
    def exec_(self, code, **kw):
        return wasmpy.run(code, **kw)

    def test_files_are_the_workspace(self):
        r = wasmpy.run("submit_result([read_file('a.txt'), read_file('sub/b.bin', binary=True).hex(), list_files('**')])",
                       files={"a.txt": "alpha", "sub/b.bin": b"\x00\x01"})
        self.assertEqual(r.output, ["alpha", "0001", ["a.txt", "sub/b.bin"]])

    def test_files_stay_inside(self):
        with self.assertRaises(ValueError):
            wasmpy.run("pass", files={"../escape.txt": "x"})

    def test_args(self):
        self.assertEqual(wasmpy.run("import sys\nsubmit_result(sys.argv[1:])", args=["a", "b"]).output, ["a", "b"])

    def test_fuel(self):
        with self.assertRaises(wasmpy.FuelExhausted):
            wasmpy.run("n = 0\nwhile True:\n    n += 1", fuel=1000000)

    def test_no_binary(self):
        old = os.environ.pop("WASMPY_BIN")
        path = os.environ.get("PATH", "")
        os.environ["PATH"] = ""
        try:
            with self.assertRaises(wasmpy.CLIError) as cm:
                wasmpy.run("pass")
            self.assertIn("no wasmpy executable", str(cm.exception))
        finally:
            os.environ["WASMPY_BIN"], os.environ["PATH"] = old, path

    def test_bad_limits(self):
        with self.assertRaises(ValueError):
            wasmpy.run("pass", timeout=-1)
        with self.assertRaises(TypeError):
            wasmpy.run("pass", timeout=1, limits=wasmpy.Limits(timeout=2))


class HTTPTransport(Transports, unittest.TestCase):
    def setUp(self):
        self.client = wasmpy.Client(serve.url, token=serve.token)

    def exec_(self, code, **kw):
        return wasmpy.run(code, client=self.client, **kw)

    def test_provenance(self):
        r = self.client.run("submit_result(1)")
        self.assertEqual(r.output, 1)
        self.assertTrue(r.provenance["execution_id"])

    def test_wrong_token(self):
        with self.assertRaises(wasmpy.Unauthorized) as cm:
            wasmpy.Client(serve.url, token="wrong").run("pass")
        self.assertEqual(cm.exception.status, 401)
        self.assertEqual(cm.exception.code, "unauthorized")

    def test_skills(self):
        names = [s["name"] for s in self.client.skills()]
        self.assertTrue(names, "the built-in example skills")
        self.assertEqual(self.client.skill(names[0])["name"], names[0])
        with self.assertRaises(wasmpy.NotFound):
            self.client.skill("no-such-skill")

    def test_execute_skill(self):
        with self.assertRaises(wasmpy.InvalidInput) as cm:
            self.client.execute("text_summarize", {"no": "such field"})
        self.assertEqual(cm.exception.status, 422)
        r = self.client.execute("text_summarize", {"text": "One sentence here. Another one there.", "max_sentences": 1})
        self.assertTrue(r.ok)
        self.assertIn("summary", r.output)
        self.assertTrue(r.provenance["execution_id"])

    def test_files_need_the_cli(self):
        with self.assertRaises(ValueError):
            wasmpy.run("pass", client=self.client, files={"a": "b"})

    def test_sessions(self):
        with self.client.session() as s:
            self.assertTrue(s.id)
            s.run("import math\ncount = 1")
            r = wasmpy.run("count += 1\nsubmit_result([count, math.pi > 3])", session=s)
            self.assertEqual(r.output, [2, True], "the state carried across turns")
            self.assertEqual(s.refresh()["turns"], 2)
            fork = s.fork()
            self.assertNotEqual(fork.id, s.id)
            self.assertEqual(fork.run("submit_result(count)").output, 2)
            s.run("count = 100")
            self.assertEqual(fork.run("submit_result(count)").output, 2, "a fork is its own")
            fork.close()
            with self.assertRaises(wasmpy.GuestException):
                s.run("raise ValueError('in a session')")
            self.assertEqual(s.run("submit_result(count)").output, 100, "a failed turn keeps the state")
        with self.assertRaises(wasmpy.NotFound) as cm:
            s.run("pass")
        self.assertEqual(cm.exception.code, "unknown_session")

    def test_unreachable(self):
        with self.assertRaises(wasmpy.WasmpyError) as cm:
            wasmpy.Client("http://127.0.0.1:9", timeout=5).run("pass")
        self.assertIn("cannot reach", str(cm.exception))

    def test_bad_url(self):
        with self.assertRaises(ValueError):
            wasmpy.Client("localhost:8002")


if __name__ == "__main__":
    unittest.main()
