"""Registering skills over the API with wasmpy.Client, against a real
`wasmpy serve` whose store holds an admin's token."""
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import wasmpy  # noqa: E402
from support import Serve, binary  # noqa: E402

GREET = {
    "skill.yaml": "name: greet\nversion: {version}\ndescription: greets\nhandler: greet.run\nsafety_flags: [none]\n",
    "schema.json": '{"input": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"],'
                   ' "additionalProperties": false}, "output": {"type": "string"}}',
    "greet.py": "def run(name):\n    return '{word} ' + name\n",
}


def greet(version: str, word: str):
    return {k: v.replace("{version}", version).replace("{word}", word) for k, v in GREET.items()}


class RegisterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="wasmpy-register-")
        db = os.path.join(cls.tmp.name, "p.db")
        out = subprocess.run([binary(), "token", "create", "ops", "--role", "admin", "--db", db],
                             capture_output=True, text=True, check=True)
        cls.serve = Serve(db=db)
        cls.admin = wasmpy.Client(cls.serve.url, token=out.stdout.strip())
        cls.runner = wasmpy.Client(cls.serve.url, token=Serve.token)

    @classmethod
    def tearDownClass(cls):
        cls.serve.close()
        cls.tmp.cleanup()

    def test_register_run_disable_delete(self):
        d = os.path.join(self.tmp.name, "greet")
        os.makedirs(d)
        for name, content in greet("1.0.0", "hello").items():
            with open(os.path.join(d, name), "w") as f:
                f.write(content)
        info = self.admin.register(d)
        self.assertEqual((info["name"], info["version"]), ("greet", "1.0.0"))
        self.assertEqual(info["registration"]["registered_by"], "ops")
        self.assertEqual(self.runner.execute("greet", {"name": "Ada"}).output, "hello Ada")

        with self.assertRaises(wasmpy.Conflict) as cm:
            self.admin.register(greet("1.0.0", "changed"))
        self.assertEqual(cm.exception.code, "skill_exists")
        with self.assertRaises(wasmpy.Forbidden):
            self.runner.register(greet("2.0.0", "hi"))

        self.admin.register(greet("2.0.0", "hi"))
        self.assertEqual(self.runner.execute("greet", {"name": "Ada"}).output, "hi Ada")
        self.assertEqual(self.runner.execute("greet", {"name": "Ada"}, version="1.0.0").output, "hello Ada")
        self.assertTrue(self.admin.disable("greet", "2.0.0")["disabled"])
        with self.assertRaises(wasmpy.Conflict) as cm:
            self.runner.execute("greet", {"name": "Ada"}, version="2.0.0")
        self.assertEqual(cm.exception.code, "skill_disabled")
        self.admin.enable("greet", "2.0.0")
        self.admin.delete("greet", "1.0.0")
        with self.assertRaises(wasmpy.NotFound):
            self.runner.execute("greet", {"name": "Ada"}, version="1.0.0")
        actions = [(e["action"], e["version"]) for e in self.admin.audit(skill="greet")]
        self.assertEqual(actions, [("delete", "1.0.0"), ("enable", "2.0.0"), ("disable", "2.0.0"),
                                   ("register", "2.0.0"), ("register", "1.0.0")])

    def test_invalid_skill_lists_every_problem(self):
        files = greet("one", "x")
        files["skill.yaml"] += "timeout: 5s\n"
        with self.assertRaises(wasmpy.InvalidSkill) as cm:
            self.admin.register(files)
        reasons = [p["path"] + ": " + p["reason"] for p in cm.exception.problems]
        self.assertEqual(len(reasons), 2, reasons)
        self.assertIn("timeout: unknown field", reasons[0])
        self.assertIn('version "one": not a semantic version', reasons[1])


if __name__ == "__main__":
    unittest.main()
