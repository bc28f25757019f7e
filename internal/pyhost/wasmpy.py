"""wasmpy: what the sandbox host offers this program.

The capabilities granted to a run are also builtins, so a script can call
read_file(...) without importing anything. Each one is a host call: the
program waits while the host does the work, then gets a value back or an
ordinary Python exception.
"""
import binascii as _binascii
import json as _json

# _call(fn, args, data=None) -> value is injected by the runner before this
# source runs: args a dict (JSON), data raw bytes attached to the call.

BUILTIN_CAPABILITIES = ("read_file", "write_file", "list_files", "search_files",
                        "ask_llm", "embed", "submit_result", "http_request")

# The exception classes the capabilities raise beyond Python's own; builtins
# too, so that code can catch them without importing wasmpy.
BUILTIN_EXCEPTIONS = ("HostError", "LLMError", "BudgetExceeded", "ResultError")


class HostError(Exception):
    """The host could not do what was asked."""


class LLMError(HostError):
    """The LLM call failed (not configured, unreachable, or an error reply)."""


class BudgetExceeded(HostError):
    """The run has used up a per-run budget (LLM calls or tokens)."""


class ResultError(HostError):
    """submit_result refused the value (second call, schema mismatch, too big)."""


_EXCEPTIONS = {
    "ValueError": ValueError,
    "TypeError": TypeError,
    "PermissionError": PermissionError,
    "FileNotFoundError": FileNotFoundError,
    "IsADirectoryError": IsADirectoryError,
    "NotADirectoryError": NotADirectoryError,
    "UnicodeError": UnicodeError,
    # UnicodeDecodeError's constructor wants the bytes; its parent class carries the message.
    "UnicodeDecodeError": UnicodeError,
    "OSError": OSError,
    "TimeoutError": TimeoutError,
    "ConnectionError": ConnectionError,
    "HostError": HostError,
    "LLMError": LLMError,
    "BudgetExceeded": BudgetExceeded,
    "ResultError": ResultError,
}


def exception_for(type_name, message):
    """The exception the guest raises for a host error of class type_name."""
    return _EXCEPTIONS.get(type_name, HostError)(message)


def _str(name, value):
    if not isinstance(value, str):
        raise TypeError("%s must be str, not %s" % (name, type(value).__name__))
    return value


def read_file(path, binary=False):
    """Returns the workspace file at path: str (UTF-8), or bytes if binary."""
    return _call("read_file", {"path": _str("path", path), "binary": bool(binary)})


def write_file(path, data):
    """Writes str (as UTF-8) or bytes to the workspace file at path; returns its size."""
    _str("path", path)
    if isinstance(data, str):
        # Encoding here makes a lone surrogate the guest's UnicodeEncodeError,
        # not a silent replacement on the host.
        data = data.encode("utf-8")
    elif isinstance(data, memoryview):
        data = bytes(data)  # any shape, contiguous
    elif not isinstance(data, (bytes, bytearray)):
        raise TypeError("data must be str or bytes, not %s" % type(data).__name__)
    return _call("write_file", {"path": path}, data)


def list_files(pattern="*"):
    """Lists workspace paths matching a glob (** spans directories), sorted."""
    return _call("list_files", {"pattern": _str("pattern", pattern)})


def search_files(pattern, glob="**"):
    """Finds lines matching a regular expression in workspace files.

    Returns a list of {"path", "line", "text"} dicts."""
    return _call("search_files", {"pattern": _str("pattern", pattern),
                                  "glob": _str("glob", glob)})


def ask_llm(prompt, system=None, model=None, temperature=None, max_tokens=None):
    """Asks the configured LLM and returns its reply text."""
    args = {"prompt": _str("prompt", prompt)}
    if system is not None:
        args["system"] = _str("system", system)
    if model is not None:
        args["model"] = _str("model", model)
    if temperature is not None:
        args["temperature"] = float(temperature)
    if max_tokens is not None:
        args["max_tokens"] = int(max_tokens)
    return _call("ask_llm", args)


def embed(texts, model=None):
    """Embeds texts with the configured embeddings endpoint.

    texts is a list of strings (one string gives one vector); returns a list
    of vectors (lists of floats), in the order of texts."""
    one = isinstance(texts, str)
    items = [texts] if one else list(texts)
    args = {"texts": [_str("texts[%d]" % i, t) for i, t in enumerate(items)]}
    if model is not None:
        args["model"] = _str("model", model)
    vectors = _call("embed", args)
    return vectors[0] if one else vectors


def submit_result(value):
    """Hands one JSON-serializable value back to the caller, once per run."""
    try:
        _json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ResultError("submit_result: value is not JSON-serializable: %s" % e) from None
    _call("submit_result", {"value": value})


def http_request(method, url, headers=None, body=None, timeout=None):
    """Makes one HTTP request through the host, to a host on the run's
    allow-list; redirects are followed (each checked against the list).

    headers is a dict or a list of (name, value) pairs; body str (sent as
    UTF-8) or bytes; timeout in seconds, within the host's. Returns a dict:
    status (int), reason, url (after redirects), headers (a list of
    [name, value]) and body (bytes). A host off the list raises
    PermissionError; no answer in time TimeoutError; a failed connection
    ConnectionError; a spent budget BudgetExceeded. urllib.request and
    requests use it: most code never calls it directly."""
    args = {"method": _str("method", method).upper(), "url": _str("url", url)}
    if headers:
        items = headers.items() if hasattr(headers, "items") else headers
        pairs = []
        for item in items:
            k, v = item
            if isinstance(v, bytes):
                v = v.decode("latin-1")
            pairs.append([_str("header name", k), v if isinstance(v, str) else str(v)])
        args["headers"] = pairs
    if timeout is not None:
        args["timeout"] = float(timeout)
    if isinstance(body, str):
        body = body.encode("utf-8")
    elif isinstance(body, (bytearray, memoryview)):
        body = bytes(body)
    elif body is not None and not isinstance(body, bytes):
        raise TypeError("body must be str or bytes, not %s" % type(body).__name__)
    answer = _call("http_request", args, body)
    answer["body"] = _binascii.a2b_base64(answer["body"]) if answer.get("body") else b""
    return answer


_http_request = http_request  # what urllib's and requests' hooks call

_shown = 0


def _image(obj):
    """obj as (bytes, extension): image bytes, SVG text, or an object that
    renders itself (the _repr_png_/_repr_svg_/_repr_jpeg_ protocol, a
    pygal chart's render(), an svgwrite drawing's tostring())."""
    for attr, ext in (("_repr_png_", "png"), ("_repr_jpeg_", "jpg"), ("_repr_svg_", "svg")):
        fn = getattr(type(obj), attr, None)
        if fn is not None:
            try:
                data = fn(obj)
            except ImportError:  # pygal's PNG needs cairosvg: its SVG will do
                continue
            if data is not None:
                return _image(data.encode("utf-8") if isinstance(data, str) else data)
    for attr in ("render", "tostring"):
        fn = getattr(obj, attr, None)
        if callable(fn) and not isinstance(obj, (str, bytes, bytearray, memoryview)):
            return _image(fn())
    if isinstance(obj, str):
        obj = obj.encode("utf-8")
    if isinstance(obj, (bytearray, memoryview)):
        obj = bytes(obj)
    if not isinstance(obj, bytes):
        raise TypeError("show() wants image bytes, SVG text or a chart, not %s" % type(obj).__name__)
    if obj.startswith(b"\x89PNG\r\n\x1a\n"):
        return obj, "png"
    if obj.startswith(b"\xff\xd8\xff"):
        return obj, "jpg"
    if obj[:6] in (b"GIF87a", b"GIF89a"):
        return obj, "gif"
    if obj[:4] == b"RIFF" and obj[8:12] == b"WEBP":
        return obj, "webp"
    if b"<svg" in obj[:4096]:
        return obj, "svg"
    raise ValueError("show(): not a PNG, JPEG, GIF, WebP or SVG image")


def show(image, name=None):
    """Shows an image to whoever ran this code: writes it to the workspace
    (as name, default figure-N.png/.svg/...), whence it comes back as an
    image (MCP image content, the "images" of the HTTP and JSON results).

    image is PNG/JPEG/GIF/WebP bytes, SVG text, or a chart that renders
    itself (pygal's render(), svgwrite's tostring(), _repr_png_/_repr_svg_).
    Returns the file's path."""
    global _shown
    data, ext = _image(image)
    if name is None:
        _shown += 1
        name = "figure-%d.%s" % (_shown, ext)
    _str("name", name)
    import os
    path = name if os.path.isabs(name) else os.path.join("/workspace", name)
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    return path


def _generic(name):
    """A wrapper for a capability an embedder added. Positional arguments go
    under the key "*" (hostfuncs.PositionalKey); the host binds them to its
    parameters in declared order."""
    def call(*args, **kwargs):
        if args:
            kwargs["*"] = list(args)
        return _call(name, kwargs)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = "Host capability %r: positional arguments in declared order, or by keyword." % name
    return call


def _refused(name):
    def refused(*args, **kwargs):
        # Worded as the host words a call it refuses.
        raise PermissionError('capability "%s" is not granted to this run' % name)
    refused.__name__ = refused.__qualname__ = name
    return refused
