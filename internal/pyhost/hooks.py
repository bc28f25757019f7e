"""Hooks the runner installs once, before the snapshot, on modules the
user's code may import:

- the network: the sandbox has no sockets. Name resolution and connect
  raise PermissionError naming the http_request capability; with it
  granted, urllib.request and requests (when a package set has it) send
  their requests through it, so ordinary code needs no change.
- numpy.f2py: the sci interpreter leaves it out (it needs a Fortran
  compiler and subprocesses), yet numpy lists it in __all__: a stub that
  raises when used keeps `from numpy import *` working.

A hook patches a module right after it is first executed (a finder that
watches the names below), or at once when it is already loaded.
"""
import builtins
import errno
import sys

NO_NETWORK = ("network access is not granted to this run: the sandbox has no sockets, and "
              "HTTP needs the http_request capability with the host on its allow-list "
              "(on the CLI: --allow-http HOST)")
NO_SOCKETS = ("the sandbox has no sockets: HTTP goes through the http_request capability "
              "(urllib.request, requests and wasmpy.http_request use it)")


def _granted():
    runner = sys.modules.get("_wasmpy_runner")
    return runner is not None and "http_request" in runner._installed


def _refusal():
    return PermissionError(errno.EACCES, NO_SOCKETS if _granted() else NO_NETWORK)


def _refuse(*args, **kwargs):
    raise _refusal()


_RESOLVERS = ("getaddrinfo", "gethostbyname", "gethostbyname_ex", "gethostbyaddr",
              "getnameinfo", "getservbyname", "getservbyport", "getprotobyname",
              "if_nameindex", "if_nametoindex", "if_indextoname")


def _patch_socket_c(mod):
    for name in _RESOLVERS:
        if not hasattr(mod, name):
            setattr(mod, name, _refuse)


def _patch_socket(mod):
    _patch_socket_c(mod)
    if not hasattr(mod, "gethostname"):
        mod.gethostname = lambda: "localhost"

    def connect(self, address):
        raise _refusal()

    def connect_ex(self, address):
        raise _refusal()

    init = mod.socket.__init__

    def __init__(self, *args, **kwargs):
        try:
            init(self, *args, **kwargs)
        except OSError:  # WASI's ENOTSUP
            raise _refusal() from None

    __init__.__doc__ = init.__doc__
    mod.socket.__init__ = __init__
    mod.socket.connect = connect
    mod.socket.connect_ex = connect_ex


def _http_request(method, url, headers, body, timeout):
    api = sys.modules["wasmpy"]
    return api._http_request(method, url, headers=headers, body=body, timeout=timeout)


def _read_body(data):
    if data is None or isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    if isinstance(data, str):
        return data.encode("utf-8")
    if hasattr(data, "read"):
        chunk = data.read()
        return chunk.encode("utf-8") if isinstance(chunk, str) else bytes(chunk)
    return b"".join(c.encode("utf-8") if isinstance(c, str) else bytes(c) for c in data)


def _patch_urllib_request(mod):
    import http.client
    import io
    import urllib.error
    import urllib.response

    def open_via_capability(self, req):
        if not _granted():
            raise urllib.error.URLError(_refusal())
        headers = dict(req.unredirected_hdrs)
        headers.update({k: v for k, v in req.headers.items() if k not in headers})
        timeout = req.timeout if isinstance(req.timeout, (int, float)) else None
        try:
            ans = _http_request(req.get_method(), req.full_url, list(headers.items()),
                                _read_body(req.data), timeout)
        except OSError as e:
            raise urllib.error.URLError(e) from None
        msg = http.client.HTTPMessage()
        for k, v in ans["headers"]:
            msg[k] = v
        resp = urllib.response.addinfourl(io.BytesIO(ans["body"]), msg, ans["url"], ans["status"])
        resp.msg = resp.reason = ans["reason"]
        return resp

    mod.HTTPHandler.http_open = open_via_capability
    if not hasattr(mod, "HTTPSHandler"):  # no ssl module: the host does TLS
        class HTTPSHandler(mod.AbstractHTTPHandler):
            https_open = open_via_capability
            https_request = mod.AbstractHTTPHandler.do_request_
        HTTPSHandler.__module__ = mod.__name__
        mod.HTTPSHandler = HTTPSHandler
        build = mod.build_opener

        def build_opener(*handlers):
            opener = build(*handlers)
            if not any(hasattr(h, "https_open") for h in opener.handlers):
                opener.add_handler(mod.HTTPSHandler())
            return opener

        build_opener.__doc__ = build.__doc__
        mod.build_opener = build_opener


def _patch_requests_adapters(mod):
    import io
    from requests import exceptions
    from requests.models import Response
    from requests.structures import CaseInsensitiveDict
    from requests.utils import get_encoding_from_headers

    def send(self, request, stream=False, timeout=None, verify=True, cert=None, proxies=None):
        if not _granted():
            raise exceptions.ConnectionError(_refusal(), request=request)
        if isinstance(timeout, tuple):
            parts = [t for t in timeout if t is not None]
            timeout = sum(parts) if parts else None
        headers = []
        for k, v in request.headers.items():
            if k.lower() == "accept-encoding":  # urllib3 decodes these; so does send
                v = ", ".join(c.strip() for c in str(v).split(",")
                              if c.strip().split(";")[0] in ("gzip", "deflate", "identity")) or "identity"
            headers.append((k, v))
        try:
            ans = _http_request(request.method, request.url, headers,
                                _read_body(request.body), timeout)
        except TimeoutError as e:
            raise exceptions.ReadTimeout(e, request=request) from None
        except OSError as e:
            raise exceptions.ConnectionError(e, request=request) from None
        r = Response()
        r.status_code = ans["status"]
        headers = CaseInsensitiveDict()
        for k, v in ans["headers"]:
            headers[k] = headers[k] + ", " + v if k in headers else v
        body = ans["body"]
        coding = headers.get("content-encoding", "").strip().lower()
        if body and coding in ("gzip", "x-gzip", "deflate"):
            import zlib
            try:
                if coding == "deflate":
                    try:
                        body = zlib.decompress(body)
                    except zlib.error:
                        body = zlib.decompress(body, -zlib.MAX_WBITS)
                else:
                    body = zlib.decompress(body, 16 + zlib.MAX_WBITS)
            except zlib.error as e:
                raise exceptions.ContentDecodingError(e, request=request) from None
        r.headers = headers
        r.encoding = get_encoding_from_headers(headers)
        r.raw = io.BytesIO(body)
        r._content = body
        r.reason = ans["reason"]
        r.url = ans["url"]
        r.request = request
        r.connection = self
        return r

    mod.HTTPAdapter.send = send


class _F2PY:
    """numpy.f2py where the interpreter has none."""

    MESSAGE = ("numpy.f2py is not available in the wasmpy sandbox: building Fortran "
               "extensions needs a compiler and subprocesses")

    def find_spec(self, name, path=None, target=None):
        if name != "numpy.f2py":
            return None
        from importlib.machinery import ModuleSpec
        return ModuleSpec(name, self)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        message = self.MESSAGE

        def unavailable(*args, **kwargs):
            raise NotImplementedError(message)

        module.__doc__ = message
        module.__all__ = []
        for name in ("run_main", "compile", "main", "get_include"):
            setattr(module, name, unavailable)

        def __getattr__(name):
            raise AttributeError("module 'numpy.f2py' has no attribute %r: %s" % (name, message))

        module.__getattr__ = __getattr__


HOOKS = {
    "socket": _patch_socket,
    "urllib.request": _patch_urllib_request,
    "requests.adapters": _patch_requests_adapters,
}


class _Watch:
    """Patches the modules of HOOKS as they are first executed."""

    def find_spec(self, name, path=None, target=None):
        hook = HOOKS.get(name)
        if hook is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        spec.loader = _Patching(loader, hook)
        return spec


class _Patching:
    def __init__(self, loader, hook):
        self.loader, self.hook = loader, hook

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        # The module's spec names its real loader again (importlib.resources
        # and friends look at it).
        module.__spec__.loader = module.__loader__ = self.loader
        self.loader.exec_module(module)
        _apply(self.hook, module)

    def __getattr__(self, name):
        return getattr(self.loader, name)


def _apply(hook, module):
    """Runs a hook; one that does not fit a module's version leaves the
    module as it is (its requests then meet the socket refusal) rather
    than failing its import."""
    try:
        hook(module)
    except Exception:
        pass


def install():
    try:
        import _socket
    except ImportError:  # an interpreter built without it: nothing to refuse
        pass
    else:
        _patch_socket_c(_socket)
    sys.meta_path.insert(0, _Watch())
    sys.meta_path.append(_F2PY())
    for name, hook in HOOKS.items():
        if name in sys.modules:
            _apply(hook, sys.modules[name])


def annotate(exc):
    """Adds to a ModuleNotFoundError for numpy or pandas, in an interpreter
    without numpy, where to find them (the runner calls it on the run's
    uncaught exception)."""
    if not isinstance(exc, ModuleNotFoundError) or not isinstance(exc.msg, str):
        return
    top = (exc.name or "").partition(".")[0]
    if top not in ("numpy", "pandas"):
        return
    import importlib.util
    if importlib.util.find_spec("numpy") is not None:
        return  # this is the interpreter with numpy
    exc.msg += ("; %s is in wasmpy's sci interpreter: `wasmpy exec --interpreter sci` "
                "(Config.Interpreter \"sci\" in Go); wasmpy serve and wasmpy mcp use it "
                "when it is installed (make interpreter)" % top)
