"""wasmpy: run untrusted Python in the wasmpy sandbox (CPython compiled to
WebAssembly), and define functions whose bodies an LLM writes.

    import wasmpy
    r = wasmpy.run("submit_result(6 * 7)", timeout=5)
    r.output  # 42

    c = wasmpy.Client("http://127.0.0.1:8002", token="...")
    c.run("print('hi')").stdout

    @wasmpy.define(tests=True)
    def slugify(title: str) -> str:
        '''Lowercase words joined by hyphens.

        >>> slugify("Hello, World!")
        'hello-world'
        '''

Standard library only; Python 3.9+. This is the host's client: code inside
the sandbox imports a module of its own called wasmpy (show, the exception
classes), which this package is not.
"""
__version__ = "0.1.0"

from typing import Mapping, Optional, Sequence, Union

from .cli import run_cli
from .client import Client, Session
from .define import define
from .errors import (BadArguments, Busy, CLIError, Conflict, Exit, Forbidden, FuelExhausted, GenerationFailed,
                     GuestException, GuestSyntaxError, InternalError, Interrupted, InvalidInput, InvalidSkill,
                     MemoryLimit, NotFound, OutputLimit, RunError, ServiceError, Timeout, Unauthorized, WasmpyError)
from .limits import Limits, Size
from .result import Result

__all__ = [
    "run", "Client", "Session", "Result", "Limits", "define",
    "WasmpyError", "RunError", "GuestSyntaxError", "GuestException", "Exit", "Timeout", "MemoryLimit",
    "OutputLimit", "FuelExhausted", "Interrupted", "InternalError", "ServiceError", "Unauthorized", "Busy",
    "NotFound", "InvalidInput", "Forbidden", "Conflict", "InvalidSkill", "GenerationFailed", "BadArguments",
    "CLIError",
]


def run(code: str, *, timeout: Optional[float] = None, memory: Optional[Size] = None,
        output: Optional[Size] = None, fuel: Optional[int] = None, limits: Optional[Limits] = None,
        files: Optional[Mapping[str, Union[str, bytes]]] = None, stdin: Optional[str] = None,
        args: Sequence[str] = (), session: Optional[Session] = None, client: Optional[Client] = None,
        check: bool = True) -> Result:
    """Runs code in the sandbox and returns its Result.

    The limits are keywords (timeout in seconds, memory and output in bytes
    or sizes such as "64MiB", fuel), or one Limits. files (path -> text or
    bytes) are the run's workspace, read with read_file. With session, the
    run continues that session's state; with client, it runs on that
    `wasmpy serve`; else the `wasmpy` CLI on PATH ($WASMPY_BIN) runs it.
    A failed run raises its kind's exception (Timeout, MemoryLimit,
    GuestException...), carrying the record, unless check is False.
    """
    if limits is None:
        limits = Limits(timeout=timeout, memory=memory, output=output, fuel=fuel)
    elif any(v is not None for v in (timeout, memory, output, fuel)):
        raise TypeError("run: give the limits as keywords or as limits=, not both")
    if session is not None:
        if files or args:
            raise ValueError("run: a session run takes no files or args")
        return session.run(code, limits=limits, stdin=stdin, check=check)
    if client is not None:
        if files:
            raise ValueError("run: files need the CLI transport: POST /exec has no workspace")
        return client.run(code, limits=limits, stdin=stdin, args=args, check=check)
    result = run_cli(code, limits, files=files, stdin=stdin, args=args)
    return result.raise_for_error() if check else result
