"""The PEP 517 / PEP 660 build backend for this package, standard library only.

pip builds a package in an isolated environment into which it first installs
the backend's requirements; setuptools needs setuptools and wheel, which an
offline machine may not have. This backend needs nothing, so
`pip install --no-index ./python` works without a network.

It reads the [project] table of pyproject.toml (the subset this project uses:
one `key = value` per line, values that are strings or lists of strings) and
the version from wasmpy/__init__.py, and writes wheels and sdists whose bytes
depend only on the sources (timestamps from SOURCE_DATE_EPOCH, else 1980).
"""
import ast
import base64
import csv
import gzip
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile
from typing import Any, Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "wasmpy"
TAG = "py3-none-any"


def _project() -> Dict[str, Any]:
    """The [project] table of pyproject.toml, plus the version."""
    table: Dict[str, Any] = {}
    section = ""
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if line.startswith("["):
                section = line
            if section != "[project]" or line == section or not line or line.startswith("#"):
                continue
            key, sep, value = line.partition("=")
            try:
                if not sep:
                    raise ValueError("no '='")
                table[key.strip()] = ast.literal_eval(value.strip())
            except (ValueError, SyntaxError) as e:
                raise ValueError("pyproject.toml:%d: cannot read %r (%s)" % (n, line, e)) from None
    missing = [k for k in ("name", "description", "readme", "requires-python", "license") if k not in table]
    if missing:
        raise ValueError("pyproject.toml: [project] lacks %s" % ", ".join(missing))
    with open(os.path.join(ROOT, PACKAGE, "__init__.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__ = "([^"]+)"$', f.read(), re.M)
    if not m:
        raise ValueError("%s/__init__.py has no __version__" % PACKAGE)
    table["version"] = m.group(1)
    return table


def _metadata(project: Dict[str, Any]) -> str:
    """Core metadata (METADATA in a wheel, PKG-INFO in an sdist)."""
    lines = ["Metadata-Version: 2.1", "Name: " + project["name"], "Version: " + project["version"],
             "Summary: " + project["description"], "Requires-Python: " + project["requires-python"],
             "License: " + project["license"]]
    lines += ["Classifier: " + c for c in project.get("classifiers", [])]
    lines += ["Requires-Dist: " + d for d in project.get("dependencies", [])]
    lines.append("Description-Content-Type: text/markdown")
    with open(os.path.join(ROOT, project["readme"]), encoding="utf-8") as f:
        return "\n".join(lines) + "\n\n" + f.read()


def _names(project: Dict[str, Any]) -> Tuple[str, str]:
    """The wheel's distribution name and its dist-info directory."""
    dist = re.sub(r"[-_.]+", "_", project["name"]).lower() + "-" + project["version"]
    return dist, dist + ".dist-info"


def _dist_info(project: Dict[str, Any]) -> Dict[str, bytes]:
    _, info = _names(project)
    wheel = "Wheel-Version: 1.0\nGenerator: wasmpy_build\nRoot-Is-Purelib: true\nTag: %s\n" % TAG
    return {info + "/METADATA": _metadata(project).encode(), info + "/WHEEL": wheel.encode()}


def _sources() -> List[str]:
    """The package's files, relative to ROOT, sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, PACKAGE)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        out += [os.path.relpath(os.path.join(dirpath, f), ROOT) for f in filenames
                if f.endswith(".py") or f == "py.typed"]
    return sorted(p.replace(os.sep, "/") for p in out)


def _epoch() -> int:
    return max(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")), 315532800)


def _write_wheel(wheel_directory: str, files: Dict[str, bytes], project: Dict[str, Any]) -> str:
    """Writes files into a wheel, then its RECORD, and returns its basename."""
    dist, info = _names(project)
    name = "%s-%s.whl" % (dist, TAG)
    stamp = time.gmtime(_epoch())[:6]
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as zf:
        for path, data in files.items():
            entry = zipfile.ZipInfo(path, stamp)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(entry, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            writer.writerow([path, "sha256=" + digest, len(data)])
        writer.writerow([info + "/RECORD", "", ""])
        entry = zipfile.ZipInfo(info + "/RECORD", stamp)
        entry.external_attr = 0o644 << 16
        entry.compress_type = zipfile.ZIP_DEFLATED
        zf.writestr(entry, record.getvalue())
    return name


def get_requires_for_build_wheel(config_settings: Any = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Any = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Any = None) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Any = None) -> str:
    project = _project()
    for path, data in _dist_info(project).items():
        os.makedirs(os.path.join(metadata_directory, os.path.dirname(path)), exist_ok=True)
        with open(os.path.join(metadata_directory, path), "wb") as f:
            f.write(data)
    return _names(project)[1]


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory: str, config_settings: Any = None, metadata_directory: Optional[str] = None) -> str:
    project = _project()
    files = {}
    for path in _sources():
        with open(os.path.join(ROOT, path), "rb") as f:
            files[path] = f.read()
    files.update(_dist_info(project))
    return _write_wheel(wheel_directory, files, project)


def build_editable(wheel_directory: str, config_settings: Any = None,
                   metadata_directory: Optional[str] = None) -> str:
    """A wheel whose .pth file puts this directory on sys.path, so edits to
    the sources take effect without reinstalling."""
    project = _project()
    files = {"_%s_editable.pth" % PACKAGE: (ROOT + "\n").encode()}
    files.update(_dist_info(project))
    return _write_wheel(wheel_directory, files, project)


def build_sdist(sdist_directory: str, config_settings: Any = None) -> str:
    project = _project()
    dist, _ = _names(project)
    paths = ["pyproject.toml", project["readme"], os.path.basename(__file__)] + _sources()
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, "tests")):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        paths += [os.path.relpath(os.path.join(dirpath, f), ROOT).replace(os.sep, "/")
                  for f in sorted(filenames) if f.endswith(".py")]
    name = dist + ".tar.gz"

    def add(tf: tarfile.TarFile, path: str, data: bytes) -> None:
        info = tarfile.TarInfo(dist + "/" + path)
        info.size, info.mtime, info.mode = len(data), _epoch(), 0o644
        tf.addfile(info, io.BytesIO(data))

    with open(os.path.join(sdist_directory, name), "wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=_epoch()) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tf:
        add(tf, "PKG-INFO", _metadata(project).encode())
        for path in sorted(set(paths)):
            with open(os.path.join(ROOT, path), "rb") as f:
                add(tf, path, f.read())
    return name
