"""@wasmpy.define: functions whose bodies an LLM writes.

The decorated function's signature and docstring are all the model sees.
On the first call, `wasmpy def` asks the model for the body, validates it,
renders it from the code template, runs its tests (the docstring's doctest
examples, and the model's own with tests=True) and grades it; code that
fails any of these is fed back for another attempt. The code that passed
is cached on disk (wasmpy's code cache), so later processes reuse it after
testing it again. Every call runs the function in the sandbox: arguments
and the return value travel as JSON.
"""
import asyncio
import functools
import inspect
import json
import os
import sys
import tempfile
import threading
from typing import Any, Callable, Dict, List, Optional, TypeVar, Union, overload

from .cli import call_json, find_binary, run_cli
from .client import Client
from .errors import BadArguments, CLIError, GenerationFailed, ServiceError
from .limits import Limits
from .result import Result

F = TypeVar("F", bound=Callable[..., Any])


def signature_source(func: Callable[..., Any]) -> str:
    """The def line and docstring of func, as the model sees them."""
    sig = inspect.signature(func)
    params: List[str] = []
    star_done = False
    kinds = [p.kind for p in sig.parameters.values()]
    for p in sig.parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star_done:
            params.append("*")
            star_done = True
        text = p.name
        if p.kind is p.VAR_POSITIONAL:
            text, star_done = "*" + p.name, True
        elif p.kind is p.VAR_KEYWORD:
            text = "**" + p.name
        if p.annotation is not p.empty:
            text += ": " + annotation_text(p.annotation)
        if p.default is not p.empty:
            text += (" = " if p.annotation is not p.empty else "=") + repr(p.default)
        params.append(text)
        if p.kind is p.POSITIONAL_ONLY and (p.POSITIONAL_ONLY not in kinds[len(params):]):
            params.append("/")
    line = "def %s(%s)" % (func.__name__, ", ".join(params))
    if sig.return_annotation is not sig.empty:
        line += " -> " + annotation_text(sig.return_annotation)
    line += ":"
    doc = inspect.getdoc(func)
    if doc:
        line += '\n    """' + doc.replace("\\", "\\\\").replace('"""', '\\"\\"\\"').replace("\n", "\n    ") + '\n    """'
    return line


def annotation_text(a: Any) -> str:
    if isinstance(a, str):
        return a  # from __future__ import annotations
    return inspect.formatannotation(a)


def harness(name: str) -> str:
    """Calls the function with the JSON arguments on stdin, as `wasmpy def` does."""
    return ("\n\n# --- wasmpy.define: call %s with the JSON arguments on stdin ---\n"
            "import json as _wasmpy_json\n"
            "_wasmpy_call = _wasmpy_json.loads(input())\n"
            "submit_result(%s(*_wasmpy_call['args'], **_wasmpy_call['kwargs']))\n") % (name, name)


class Defined:
    """A function whose body is generated; call it like the original."""

    def __init__(self, func: Callable[..., Any], *, model: Optional[str], timeout: Optional[float], tests: bool,
                 min_quality: Optional[str], style: str, attempts: Optional[int], cache_dir: Optional[str],
                 client: Optional[Client], binary: Optional[str], llm_base_url: Optional[str], debug: bool) -> None:
        self.func = func
        self.signature = inspect.signature(func)
        self.source = signature_source(func)
        self.model, self.timeout, self.tests, self.min_quality = model, timeout, tests, min_quality
        self.style, self.attempts, self.cache_dir = style, attempts, cache_dir
        self.client, self.binary, self.llm_base_url, self.debug = client, binary, llm_base_url, debug
        self.code: Optional[str] = None
        self.report: Optional[Dict[str, Any]] = None
        self._lock = threading.Lock()
        functools.update_wrapper(self, func)

    def __repr__(self) -> str:
        return "<wasmpy.define %s%s>" % (self.func.__name__, self.signature)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        call = self._encode(args, kwargs)
        with self._lock:
            if self.code is None:
                return self._generate(call)
        return self._run(call)

    def _encode(self, args: Any, kwargs: Any) -> str:
        try:
            self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise BadArguments("%s%s: %s" % (self.func.__name__, self.signature, e)) from None
        try:
            return json.dumps({"args": list(args), "kwargs": kwargs}, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise TypeError("%s: the arguments must be JSON data: %s" % (self.func.__name__, e)) from None

    def _generate(self, call: str) -> Any:
        """Runs `wasmpy def` with this call's arguments (on the service, with
        a client: its POST /def): the code comes with the first value."""
        decoded = json.loads(call)
        if self.client is not None:
            try:
                report = self.client.generate_function(
                    self.source, decoded["args"], decoded["kwargs"], tests=self.tests, min_quality=self.min_quality,
                    style=self.style, attempts=self.attempts, model=self.model, limits=Limits(timeout=self.timeout))
            except ServiceError as e:
                if e.code == "bad_request" and "do not fit" in str(e):
                    raise BadArguments(str(e)) from None
                raise
            return self._generated(report)
        exe = find_binary(self.binary)
        cmd = [exe, "def", "--json", "--style", self.style,
               "--args", json.dumps(decoded["args"]), "--kwargs", json.dumps(decoded["kwargs"])]
        if self.timeout is not None:
            cmd += ["--timeout", "%gs" % self.timeout]
        if self.tests:
            cmd.append("--tests")
        if self.min_quality:
            cmd += ["--min-quality", self.min_quality]
        if self.model:
            cmd += ["--llm-model", self.model]
        if self.llm_base_url:
            cmd += ["--llm-base-url", self.llm_base_url]
        if self.attempts:
            cmd += ["--attempts", str(self.attempts)]
        if self.cache_dir:
            cmd += ["--code-cache", os.fspath(self.cache_dir)]
        if self.debug:
            cmd.append("--progress")
        with tempfile.TemporaryDirectory(prefix="wasmpy-def-") as tmp:
            path = os.path.join(tmp, "signature.py")
            with open(path, "w", encoding="utf-8") as f:
                f.write(self.source + "\n")
            try:
                report = call_json(cmd + [path])
            except CLIError as e:
                if getattr(e, "status", 0) == 2 and "do not fit" in e.message:
                    raise BadArguments(e.message) from None
                raise
        return self._generated(report)

    def _generated(self, report: Dict[str, Any]) -> Any:
        """Takes the code and the first value from a `wasmpy def --json`
        report (or POST /def's)."""
        self.report = report
        if self.debug:
            self._show(report)
        if not report.get("ok"):
            err = report.get("error") or {}
            raise GenerationFailed("%s: %s" % (self.func.__name__, err.get("message", "generation failed")),
                                   str(err.get("kind", "wasmpy")), report)
        self.code = report["code"]
        return report.get("value")

    def _show(self, report: Dict[str, Any]) -> None:
        w = sys.stderr
        for i, a in enumerate(report.get("attempts") or [], 1):
            w.write("wasmpy.define: %s: attempt %d (%s): %s\n" % (self.func.__name__, i, a.get("source"), a.get("outcome")))
        if report.get("code"):
            w.write("# --- %s: generated code ---\n%s" % (self.func.__name__, report["code"]))
        for t in report.get("tests") or []:
            w.write("#   test %s: %s\n" % (t.get("name"), t.get("outcome")))
        if report.get("quality"):
            w.write("#   quality: %s\n" % json.dumps(report["quality"], sort_keys=True))

    def _run(self, call: str) -> Any:
        assert self.code is not None
        code = self.code + harness(self.func.__name__)
        limits = Limits(timeout=self.timeout)
        if self.client is not None:
            result: Result = self.client.run(code, limits=limits, stdin=call + "\n")
        else:
            result = run_cli(code, limits, stdin=call + "\n", binary=self.binary).raise_for_error()
        if self.debug and (result.stdout or result.stderr):
            sys.stderr.write(result.stdout + result.stderr)
        return result.output


class AsyncDefined(Defined):
    """The async form: await it; the work runs in a thread."""

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        return await asyncio.to_thread(Defined.__call__, self, *args, **kwargs)


@overload
def define(func: F) -> F: ...


@overload
def define(*, model: Optional[str] = None, timeout: Optional[float] = None, tests: bool = False,
           min_quality: Optional[str] = None, style: str = "typed", attempts: Optional[int] = None,
           cache_dir: Optional[Union[str, "os.PathLike[str]"]] = None, client: Optional[Client] = None,
           binary: Optional[str] = None, llm_base_url: Optional[str] = None,
           debug: bool = False) -> Callable[[F], F]: ...


def define(func: Optional[Callable[..., Any]] = None, *, model: Optional[str] = None, timeout: Optional[float] = None,
           tests: bool = False, min_quality: Optional[str] = None, style: str = "typed",
           attempts: Optional[int] = None, cache_dir: Any = None, client: Optional[Client] = None,
           binary: Optional[str] = None, llm_base_url: Optional[str] = None, debug: bool = False) -> Any:
    """Decorates a function (def or async def) whose body an LLM writes.

    model, llm_base_url: the LLM (default: $WASMPY_LLM_MODEL or $OPENAI_MODEL,
    $WASMPY_LLM_BASE_URL or $OPENAI_BASE_URL). timeout: seconds for each run
    and LLM request (default: the CLI's 30s, or the service's). tests: ask the model for unittest tests too. min_quality:
    thresholds such as "complexity=5,hints,docstring". style: "typed" or
    "simple". cache_dir: the code cache (default: wasmpy's). client: generate
    (POST /def, with the service's LLM and code cache; llm_base_url and
    cache_dir are then the service's) and run the calls on a `wasmpy serve`,
    with no local wasmpy binary.
    debug: show the attempts, the code, the tests and the grades on stderr.
    """
    if style not in ("typed", "simple"):
        raise ValueError("style must be 'typed' or 'simple', got %r" % (style,))
    if timeout is not None and not timeout > 0:
        raise ValueError("timeout must be positive, got %r" % (timeout,))

    def wrap(f: Callable[..., Any]) -> Any:
        cls = AsyncDefined if inspect.iscoroutinefunction(f) else Defined
        return cls(f, model=model, timeout=timeout, tests=tests, min_quality=min_quality, style=style,
                   attempts=attempts, cache_dir=cache_dir, client=client, binary=binary,
                   llm_base_url=llm_base_url, debug=debug)

    return wrap(func) if func is not None else wrap
