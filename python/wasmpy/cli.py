"""The CLI transport: runs the `wasmpy` executable found on PATH (or named
by WASMPY_BIN)."""
import json
import os
import shutil
import subprocess
import tempfile
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from .errors import CLIError
from .limits import Limits
from .result import Result

Files = Mapping[str, Union[str, bytes]]

# Exit statuses of the CLI that are its own, not the script's.
EXIT_USAGE, EXIT_WASMPY = 2, 125


def find_binary(binary: Optional[str] = None) -> str:
    """The wasmpy executable: binary, $WASMPY_BIN, or `wasmpy` on PATH."""
    path = binary or os.environ.get("WASMPY_BIN") or shutil.which("wasmpy")
    if not path:
        raise CLIError("no wasmpy executable: put `wasmpy` on PATH, set WASMPY_BIN, or pass a Client URL")
    return path


def limit_flags(limits: Limits) -> List[str]:
    flags = []
    if limits.timeout is not None:
        flags += ["--timeout", "%gs" % limits.timeout]
    if limits.memory is not None:
        flags += ["--memory", str(limits.memory)]
    if limits.output is not None:
        flags += ["--output", str(limits.output)]
    if limits.fuel is not None:
        flags += ["--fuel", str(limits.fuel)]
    return flags


def write_files(root: str, files: Files) -> None:
    """Writes files (path -> text or bytes) under root, refusing paths that
    leave it."""
    for name, data in files.items():
        norm = os.path.normpath(name)
        if os.path.isabs(name) or norm == ".." or norm.startswith(".." + os.sep):
            raise ValueError("files: %r is not a relative path inside the workspace" % name)
        path = os.path.join(root, norm)
        os.makedirs(os.path.dirname(path) or root, exist_ok=True)
        with open(path, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else bytes(data))


def run_cli(code: str, limits: Limits, *, files: Optional[Files] = None, stdin: Optional[str] = None,
            args: Sequence[str] = (), binary: Optional[str] = None, extra: Sequence[str] = ()) -> Result:
    """Runs code with `wasmpy exec --json` and returns its Result."""
    exe = find_binary(binary)
    with tempfile.TemporaryDirectory(prefix="wasmpy-") as tmp:
        script = os.path.join(tmp, "main.py")
        with open(script, "w", encoding="utf-8") as f:
            f.write(code)
        cmd = [exe, "exec", "--json"] + limit_flags(limits) + list(extra)
        if files:
            ws = os.path.join(tmp, "workspace")
            os.mkdir(ws)
            write_files(ws, files)
            cmd += ["--workspace", ws]
        stdin_path = os.path.join(tmp, "stdin")
        with open(stdin_path, "w", encoding="utf-8") as f:
            f.write(stdin or "")
        cmd += ["--stdin", stdin_path, script] + list(args)
        record = call_json(cmd)
    return Result.from_record(record)


def call_json(cmd: List[str], stdin: Optional[str] = None) -> Dict[str, Any]:
    """Runs a wasmpy command that prints one JSON object, and returns it.
    A command that prints none fails with CLIError: its last stderr line,
    and its exit status in ``status``."""
    try:
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, encoding="utf-8")
    except OSError as e:
        raise CLIError("cannot run %s: %s" % (cmd[0], e)) from None
    try:
        record = json.loads(proc.stdout)
    except ValueError:
        record = None
    if not isinstance(record, dict):
        lines = proc.stderr.strip().splitlines()
        msg = lines[-1] if lines else "exit status %d" % proc.returncode
        if msg.startswith("wasmpy: "):
            msg = msg[len("wasmpy: "):]
        err = CLIError(msg)
        err.status = proc.returncode  # type: ignore[attr-defined]
        raise err
    return record
