"""`pip install ./python` works offline: the in-tree build backend writes a
correct wheel, and the installed package runs code from outside the source
tree."""
import base64
import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import wasmpy  # noqa: E402
import wasmpy_build  # noqa: E402
from support import binary  # noqa: E402

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

# Run by the installed interpreter from an empty directory: which wasmpy it
# imports, its version and files as installed, and a run through the CLI.
PROBE = """
import importlib.metadata as m, json, wasmpy
r = wasmpy.run("print('hi'); submit_result(6 * 7)", timeout=30)
print(json.dumps({"file": wasmpy.__file__, "version": wasmpy.__version__, "dist": m.version("wasmpy"),
                  "files": sorted(str(f) for f in m.files("wasmpy")), "output": r.output, "stdout": r.stdout}))
"""


class Backend(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory(prefix="wasmpy-wheel-")
        self.addCleanup(tmp.cleanup)
        self.dir = tmp.name

    def test_wheel_is_complete_and_recorded(self):
        name = wasmpy_build.build_wheel(self.dir)
        self.assertEqual(name, "wasmpy-%s-py3-none-any.whl" % wasmpy.__version__)
        with zipfile.ZipFile(os.path.join(self.dir, name)) as zf:
            info = "wasmpy-%s.dist-info/" % wasmpy.__version__
            names = zf.namelist()
            for want in ["wasmpy/__init__.py", "wasmpy/client.py", "wasmpy/py.typed",
                         info + "METADATA", info + "WHEEL", info + "RECORD"]:
                self.assertIn(want, names)
            self.assertFalse([n for n in names if "__pycache__" in n or n.startswith("tests/")], names)
            meta = zf.read(info + "METADATA").decode()
            for line in ["Name: wasmpy", "Version: " + wasmpy.__version__, "Requires-Python: >=3.9",
                         "Classifier: Typing :: Typed", "Description-Content-Type: text/markdown"]:
                self.assertIn(line + "\n", meta)
            self.assertNotIn("Requires-Dist", meta)
            self.assertIn("Tag: py3-none-any\n", zf.read(info + "WHEEL").decode())
            rows = list(csv.reader(io.StringIO(zf.read(info + "RECORD").decode())))
            self.assertEqual(sorted(r[0] for r in rows), sorted(names))
            for path, digest, size in rows:
                if path == info + "RECORD":
                    self.assertEqual((digest, size), ("", ""))
                    continue
                data = zf.read(path)
                want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                self.assertEqual((digest, size), ("sha256=" + want, str(len(data))), path)

    def test_builds_are_reproducible(self):
        first = wasmpy_build.build_wheel(self.dir)
        with open(os.path.join(self.dir, first), "rb") as f:
            before = f.read()
        os.remove(os.path.join(self.dir, first))
        wasmpy_build.build_wheel(self.dir)
        with open(os.path.join(self.dir, first), "rb") as f:
            self.assertEqual(f.read(), before)

    def test_sdist_holds_what_a_rebuild_needs(self):
        name = wasmpy_build.build_sdist(self.dir)
        top = "wasmpy-%s/" % wasmpy.__version__
        with tarfile.open(os.path.join(self.dir, name)) as tf:
            names = tf.getnames()
            pkg_info = tf.extractfile(top + "PKG-INFO").read().decode()
        for want in ["pyproject.toml", "README.md", "wasmpy_build.py", "wasmpy/py.typed", "tests/test_install.py"]:
            self.assertIn(top + want, names)
        self.assertIn("Version: %s\n" % wasmpy.__version__, pkg_info)

    def test_bad_pyproject_line_is_named(self):
        root = os.path.join(self.dir, "src")
        shutil.copytree(SOURCE, root, ignore=shutil.ignore_patterns("__pycache__"))
        with open(os.path.join(root, "pyproject.toml"), "a") as f:
            f.write("[project]\nauthors = [{ name = \"x\" }]\n")
        out = subprocess.run([sys.executable, "-c", "import wasmpy_build; wasmpy_build.build_wheel('.')"],
                             cwd=root, capture_output=True, text=True)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("pyproject.toml:", out.stderr)
        self.assertIn("authors", out.stderr)


class Install(unittest.TestCase):
    """pip, with no index, installs ./python into a fresh venv (or, where the
    venv cannot have pip, into a --target directory)."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.env = dict(os.environ, WASMPY_BIN=binary(), PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
        cls.env.pop("PYTHONPATH", None)
        cls.tmp = tempfile.TemporaryDirectory(prefix="wasmpy-install-")
        cls.python = os.path.join(cls.tmp.name, "venv", "bin", "python")
        made = subprocess.run([sys.executable, "-m", "venv", os.path.join(cls.tmp.name, "venv")],
                              capture_output=True, text=True)
        cls.target = ""
        if made.returncode != 0 or subprocess.run([cls.python, "-m", "pip", "--version"],
                                                  capture_output=True).returncode != 0:
            cls.python, cls.target = sys.executable, os.path.join(cls.tmp.name, "target")
        cls.cwd = os.path.join(cls.tmp.name, "elsewhere")
        os.mkdir(cls.cwd)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()

    def pip(self, *args: str) -> None:
        cmd = [self.python, "-m", "pip", "install", "--no-index"]
        if self.target:
            cmd += ["--target", self.target, "--upgrade"]
        out = subprocess.run(cmd + list(args), env=self.env, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)

    def probe(self) -> dict:
        env = dict(self.env, PYTHONPATH=self.target) if self.target else self.env
        out = subprocess.run([self.python, "-c", PROBE], cwd=self.cwd, env=env, capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout)

    def test_install_then_run(self):
        self.pip(SOURCE)
        got = self.probe()
        self.assertFalse(got["file"].startswith(SOURCE), got["file"])
        self.assertEqual((got["version"], got["dist"]), (wasmpy.__version__, wasmpy.__version__))
        self.assertIn("wasmpy/py.typed", got["files"])
        self.assertEqual((got["output"], got["stdout"]), (42, "hi\n"))

    def test_editable_install_uses_the_sources(self):
        if self.target:
            self.skipTest("pip --target cannot install in editable mode")
        self.pip("-e", SOURCE)
        self.addCleanup(subprocess.run, [self.python, "-m", "pip", "uninstall", "-y", "wasmpy"],
                        env=self.env, capture_output=True)
        got = self.probe()
        self.assertEqual(got["file"], os.path.join(SOURCE, "wasmpy", "__init__.py"))
        self.assertEqual(got["output"], 42)


if __name__ == "__main__":
    unittest.main()
