"""The guest side of one run: fetch the job, install the capabilities and the
import policy, run the user's code as __main__, report how it ended.

The host loads this file as the module _wasmpy_runner. With the wasmpy
interpreter build it is loaded once, before the snapshot, and main() runs in
every fresh instance; with a plain WASI build (no _wasmpy module) it is passed
with `python -c` and the job arrives as argv[1].
"""
import binascii
import builtins
import io
import json
import linecache
import os
import sys
import traceback
import types
from json.encoder import c_make_encoder, encode_basestring
from json.scanner import c_make_scanner

try:
    import _wasmpy  # the native host-call module of the wasmpy build
except ImportError:
    _wasmpy = None

# The user's code may replace anything it can reach (json.dumps, sys.stderr,
# builtins): the runner keeps its own references, taken before it runs.
_orig_import = builtins.__import__
_dumps, _loads = json.dumps, json.loads
_exit, _write = os._exit, os.write
_format_exception = traceback.format_exception
_unbase64 = binascii.a2b_base64
# The host call's JSON, straight through _json's C encoder and scanner: the
# json module's Python layers around them cost more than the call itself.
# Without markers a circular argument is a RecursionError (bounded by the
# recursion limit), which _Transport.call reports as such.
_encode = c_make_encoder(None, json.JSONEncoder().default, encode_basestring, None,
                         ":", ",", False, False, False)
_scan = c_make_scanner(json.JSONDecoder())
from importlib.util import decode_source as _decode_source

# A report's message and traceback are cut to this many characters, so that
# an exception with a huge message still gets reported.
_REPORT_TEXT_MAX = 1 << 16


# The kinds of a host call's response (see wasmpymodule.c).
_JSON, _ERROR = 0, 3


class _Transport:
    """One host call: the capability's name, its keyword arguments as a
    JSON object, raw bytes attached (or None); back comes a JSON value, raw
    bytes, text or an error."""

    @staticmethod
    def call(fn, args, data=None):
        if _wasmpy is None:
            raise _api.HostError(
                "host capabilities need the core interpreter build, not this one")
        try:
            req = _encode(args, 0)[0] if args else ""
        except (TypeError, ValueError) as e:
            raise ValueError("%s: argument is not JSON-serializable: %s" % (fn, e)) from None
        except RecursionError:
            raise ValueError("%s: argument is not JSON-serializable: nested too deeply, "
                             "or circular" % fn) from None
        _flush_out()  # what the script printed shows before the host works
        kind, body = _wasmpy.call(fn, req, data)
        if kind == _JSON:
            return _scan(body, 0)[0]
        if kind == _ERROR:
            err = _scan(body, 0)[0]
            raise _api.exception_for(err.get("type", ""), err.get("message", ""))
        return body  # bytes or str, raw


_api = None

# A session's __main__, kept by its turns: the memory a turn leaves behind
# holds it for the next one. None in the image, so a plain run (which
# always starts from the image) never sees one.
_session_main = None

# The capabilities the last run installed as builtins: a session's next
# turn removes those it is not granted.
_installed = ()


# The signal the host raises (through PyErr_SetInterruptEx) to have stdout
# flushed: SIGUSR1, which WASI never delivers otherwise.
_FLUSH_SIGNAL = 10
_out = None  # the guest's stdout, block-buffered


def _flush_out(*_):
    try:
        _out.flush()
    except Exception:  # a reentrant call, a closed stream: the next flush will do
        pass


class _Stderr(io.TextIOWrapper):
    """stderr: unbuffered, and after what stdout holds, so the two streams
    keep the order the script wrote them in."""

    def write(self, s):
        _flush_out()
        return super().write(s)


def _streams():
    """Makes stdout block-buffered, as python3's on a pipe: every write is
    a trip through the interpreter's I/O stack and a host call, and a
    print-heavy script spent most of its time there. Nothing waits long:
    the host has the buffer flushed (with _FLUSH_SIGNAL) every few
    milliseconds of compute and before a read of stdin blocks, the runner
    before time.sleep, a capability call, an exit, an abort and the end of
    the run, and stderr before each write. stderr stays
    unbuffered. The plain WASI build, which cannot raise the signal, keeps
    both unbuffered, as `python -u`."""
    global _out
    import signal
    buffered = _wasmpy is not None and hasattr(signal, "SIGUSR1")
    for name, fd in (("stdout", 1), ("stderr", 2)):
        old = getattr(sys, name)
        old.flush()
        raw = io.FileIO(fd, "w", closefd=False)
        if name == "stdout" and buffered:
            new = io.TextIOWrapper(io.BufferedWriter(raw), encoding=old.encoding, errors=old.errors)
        else:
            cls = _Stderr if name == "stderr" else io.TextIOWrapper
            new = cls(raw, encoding=old.encoding, errors=old.errors, write_through=True)
        setattr(sys, name, new)
        setattr(sys, "__%s__" % name, new)
    _out = sys.stdout
    if buffered:
        signal.signal(_FLUSH_SIGNAL, _flush_out)
        import time
        _flushing(time, "sleep")
        _flushing(os, "_exit")
        _flushing(os, "abort")
        _flushing(signal, "raise_signal")


def _flushing(module, name):
    """Has module.name flush stdout first: what it does ends the process."""
    real = getattr(module, name)

    def flushed(*args, **kwargs):
        _flush_out()
        return real(*args, **kwargs)

    flushed.__name__, flushed.__doc__ = real.__name__, real.__doc__
    setattr(module, name, flushed)


# The module the host's entry point runs in (pyhost.RunMain): made once,
# holding only the builtins and the entry, and put back as __main__ when a
# run ends, so that a session's next turn starts its runner without
# looking up a name the turn before could have defined (a global
# __import__). The limits of that turn still hold whatever the state left.
_entry_main = None


def init(wasmpy_source):
    """Runs once per interpreter, before the snapshot (or before main)."""
    global _api, _entry_main
    _entry_main = types.ModuleType("__main__")
    _entry_main.__dict__.update(__builtins__=builtins, _wasmpy_entry=main)
    sys.modules["__main__"] = _entry_main
    _streams()
    _api = types.ModuleType("wasmpy")
    _api.__dict__["_call"] = _Transport.call
    exec(compile(wasmpy_source, "<wasmpy>", "exec"), _api.__dict__)
    sys.modules["wasmpy"] = _api
    # What the capabilities raise is catchable by name, as the capabilities
    # are callable by name: `except LLMError:` needs no import.
    for name in _api.BUILTIN_EXCEPTIONS:
        setattr(builtins, name, getattr(_api, name))
    # The host raises SIGINT's KeyboardInterrupt through the interpreter's
    # PyErr_SetInterruptEx, which needs SIGINT to have Python's handler.
    try:
        import signal
        signal.signal(signal.SIGINT, signal.default_int_handler)
    except (ImportError, AttributeError, OSError, ValueError):
        pass
    _guard_chmod()


class _Hidden:
    """Packages imported before the snapshot but kept out of sys.modules
    until the user's code imports them, which then costs nothing: the
    package comes back whole, the same module objects.

    Some code asks sys.modules whether a package is in use: logging does
    for asyncio, and when it is there, every record calls
    asyncio.current_task(), which raises and catches a RuntimeError outside
    an event loop. A fresh python3 has no asyncio there, nor should a run
    that did not import it. The finder leaves sys.meta_path once nothing
    is hidden."""

    def __init__(self):
        self.modules = {}  # name: (module, its own spec), every hidden package's modules

    @staticmethod
    def _package(name):
        top = name.partition(".")[0]
        return lambda n: n == top or n.startswith(top + ".")

    def hide(self, name):
        mine = self._package(name)
        for n in [n for n in sys.modules if mine(n)]:
            module = sys.modules.pop(n)
            self.modules[n] = (module, getattr(module, "__spec__", None))
        if self.modules and self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def find_spec(self, name, path=None, target=None):
        if name not in self.modules:
            return None
        from importlib.machinery import ModuleSpec
        return ModuleSpec(name, self, is_package=hasattr(self.modules[name][0], "__path__"))

    def create_module(self, spec):
        return self.modules[spec.name][0]

    def exec_module(self, module):
        # The import machinery gave the module this finder's spec: it gets
        # its own back, and its package's other modules return with it.
        module.__spec__ = self.modules.pop(module.__name__)[1]
        mine = self._package(module.__name__)
        for n in [n for n in self.modules if mine(n)]:
            sys.modules.setdefault(n, self.modules.pop(n)[0])
        if not self.modules and self in sys.meta_path:
            sys.meta_path.remove(self)


_hidden = _Hidden()
hide = _hidden.hide


# The read-only mounts: a change there fails with EROFS, as on Linux.
_READ_ONLY = ("/usr/local/lib", "/app")


def _guard_chmod():
    """WASI has no chmod: wasi-libc's succeeds whatever the path. This one
    fails as Linux would (missing file, read-only mount) and is otherwise a
    no-op, since WASI files carry no permission bits."""
    import errno
    import functools
    real_stat, real = os.stat, os.chmod

    def chmod(path, mode, *, dir_fd=None, follow_symlinks=True):
        real_stat(path, dir_fd=dir_fd, follow_symlinks=follow_symlinks)
        if dir_fd is None and not isinstance(path, int):
            full = os.path.abspath(os.fsdecode(path))
            for mount in _READ_ONLY:
                if full == mount or full.startswith(mount + "/"):
                    raise OSError(errno.EROFS, os.strerror(errno.EROFS), path)

    # It introspects as the builtin does (inspect.signature follows
    # __wrapped__), so it reads as os.chmod to help() and inspect.
    functools.update_wrapper(chmod, real)
    chmod.__text_signature__ = real.__text_signature__
    os.chmod = chmod


def _install(job):
    global _installed
    names = job.get("capabilities") or []
    for name in _installed:
        if name not in names and name not in _api.BUILTIN_CAPABILITIES:
            builtins.__dict__.pop(name, None)
            _api.__dict__.pop(name, None)
    _installed = tuple(names)
    for name in names:
        fn = getattr(_api, name, None)
        if fn is None:
            fn = _api._generic(name)
            setattr(_api, name, fn)
        setattr(builtins, name, fn)
    # A built-in not granted to this run refuses with PermissionError, as a
    # builtin too: a NameError would read like a typo. (Nothing of it
    # lingers from the image: the stub replaces it.)
    for name in _api.BUILTIN_CAPABILITIES:
        if name not in names:
            fn = _api._refused(name)
            setattr(_api, name, fn)
            setattr(builtins, name, fn)
    allow = job.get("allow_imports")
    builtins.__import__ = _orig_import  # a session's earlier turn may have guarded it
    if allow is not None:
        # _wasmpy_runner: a session's next turn starts by importing it from
        # __main__, with this turn's guard still in place.
        _restrict_imports(set(allow) | {"wasmpy", "_wasmpy_runner"})


def _restrict_imports(allowed):
    """Refuses imports the user's code makes of modules outside `allowed`.

    The user's code is __main__, and any module made from source at run
    time that says so with __wasmpy_policed__ (a skill's handler). Imports
    that allowed modules make internally are not checked: the policy is
    about what the user's code asks for; the sandbox is the boundary."""

    def guarded(name, globals=None, locals=None, fromlist=(), level=0):
        # The caller's frame, not the globals argument: a bare __import__()
        # call passes none.
        caller = sys._getframe(1).f_globals
        if level == 0 and (caller.get("__name__") == "__main__" or caller.get("__wasmpy_policed__") is True):
            top = name.partition(".")[0]
            if top not in allowed:
                raise ImportError("import of %r is not allowed in this sandbox" % top,
                                  name=top)
        return _orig_import(name, globals, locals, fromlist, level)

    builtins.__import__ = guarded


def _reseed():
    # A snapshot freezes random's state: give every run its own.
    rnd = sys.modules.get("random")
    if rnd is not None:
        rnd.seed()


def _safe(fn, fallback):
    """fn(), or fallback when the user's code makes it fail: an exception
    may have a __str__ that raises, a metaclass with odd names, and so on."""
    try:
        value = fn()
        if type(value) is str:
            return value
    except BaseException:
        pass
    return fallback


def _cut(text):
    if len(text) > _REPORT_TEXT_MAX:
        return text[:_REPORT_TEXT_MAX] + "... (cut)"
    return text


def _type_name(typ):
    module = _safe(lambda: typ.__module__, "")
    name = _safe(lambda: typ.__qualname__, "") or _safe(lambda: typ.__name__, "?")
    if module in ("builtins", "__main__", ""):
        return name
    return module + "." + name


# The sandbox's own code: its frames never show in a traceback.
_HIDDEN = ("<wasmpy>", "<wasmpy-runner>")


def _strip(tb):
    """tb without the frames of the sandbox's own code."""
    kept = []
    while tb is not None:
        if tb.tb_frame.f_code.co_filename not in _HIDDEN:
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for t in reversed(kept):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def _strip_chain(exc):
    """Strips the sandbox's frames from exc and the exceptions it chains."""
    seen, todo = set(), [exc]
    while todo:
        e = todo.pop()
        if not isinstance(e, BaseException) or id(e) in seen:
            continue
        seen.add(id(e))
        e.__traceback__ = _strip(e.__traceback__)
        todo.extend((e.__cause__, e.__context__))
        if isinstance(e, BaseExceptionGroup):
            todo.extend(e.exceptions)


def _error_report(kind, exc):
    """Describes exc for the host, without the sandbox's own frames. It
    never raises, whatever exc's class does."""
    typ = type(exc)
    name = _type_name(typ)
    try:
        sys.modules["_wasmpy_hooks"].annotate(exc)  # a hint for a missing numpy
    except BaseException:
        pass
    try:
        _strip_chain(exc)
    except BaseException:
        pass
    tb = exc.__traceback__
    text = _safe(lambda: "".join(_format_exception(typ, exc, tb)),
                 "%s: <exception could not be formatted>\n" % name)
    report = {"status": kind, "type": name,
              "message": _cut(_safe(lambda: str(exc), "<exception str() failed>")),
              "traceback": _cut(text), "exit_code": 1}
    if isinstance(exc, SyntaxError):
        lineno = exc.lineno
        if type(lineno) is int and lineno > 0:
            report["line"] = lineno
        if type(exc.msg) is str:
            report["message"] = _cut(exc.msg)
    return report, text


def _stderr(text):
    """Writes text to the guest's stderr (fd 2) whatever the user's code did
    to sys.stderr and sys.__stderr__ (replaced, set to None, closed)."""
    data = text.encode("utf-8", "backslashreplace")
    try:
        while data:
            data = data[_write(2, data):]
    except OSError:
        pass


def _exit_code(code):
    """Maps SystemExit's argument to a process status, as CPython does."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    _flush()
    _stderr(_safe(lambda: str(code), "<exit message str() failed>") + "\n")
    return 1


def _failed(kind, exc):
    report, text = _error_report(kind, exc)
    _flush()
    _stderr(text)
    return report


def run(job, read_source):
    """Runs the source read_source() returns (bytes, decoded as CPython
    decodes a script file), or the job's module, as __main__, then, for an
    interactive job, a REPL (as python3 -i), and returns the report (a
    dict). The source is dropped once compiled, so the code can use its
    memory."""
    sys.argv = list(job.get("argv") or ["<string>"])
    if job.get("app"):
        # The program's directory comes first, as python3 puts a script's
        # (once: a session's next turn finds it there already).
        if job["app"] in sys.path:
            sys.path.remove(job["app"])
        sys.path.insert(0, job["app"])
    try:
        os.chdir("/workspace")  # the run's workspace, when the host mounts one
    except OSError:
        pass
    _install(job)
    _reseed()
    global _session_main
    main = _session_main if job.get("session") else None
    if main is None:
        main = types.ModuleType("__main__")
        main.__dict__["__builtins__"] = builtins
    if job.get("session"):
        _session_main = main
    sys.modules["__main__"] = main
    report = _run_main(job, main, read_source)
    if not job.get("interactive") or report["status"] == "exit":
        return report
    _flush()
    try:
        _interact(sys.modules["__main__"].__dict__,
                  banner=job.get("banner"))
    except SystemExit as e:
        return _exit_report(e)
    except BaseException as e:
        return _failed("exception", e)
    return {"status": "ok", "exit_code": 0}


def _run_main(job, main, read_source):
    """Runs the job's source or module in main."""
    module = job.get("module")
    try:
        if module or job.get("app_main"):
            import runpy
            # As python3 -m MODULE, or python3 DIR (its __main__.py, argv kept).
            runpy._run_module_as_main(module or "__main__", alter_argv=bool(module))
            return {"status": "ok", "exit_code": 0}
        filename = job.get("filename") or "<string>"
        main.__file__ = filename
        try:
            source = read_source()
            code = compile(source, filename, "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as e:
            return _failed("syntax", e)
        except BaseException as e:  # MemoryError, RecursionError
            return _failed("exception", e)
        # Tracebacks show source lines, as CPython's do, from linecache:
        # the guest has no file to read them from.
        text = _decode_source(source)
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        del source, text
        exec(code, main.__dict__)
    except SystemExit as e:
        return _exit_report(e)
    except BaseException as e:
        return _failed("exception", e)
    return {"status": "ok", "exit_code": 0}


def _exit_report(e):
    status = _exit_code(e.code)
    return {"status": "exit" if status else "ok", "exit_code": status}


def _console_class():
    import code

    class Console(code.InteractiveConsole):
        def showtraceback(self):
            # The sandbox's frames (a wrapper such as time.sleep's) never
            # show in the user's traceback, in the REPL as in a script.
            try:
                _strip_chain(sys.exc_info()[1])
            except BaseException:
                pass
            super().showtraceback()

        def raw_input(self, prompt=""):
            # A line the host's line editor sends when Tab is typed: the
            # line up to the cursor, whose completions it wants.
            line = input(prompt)
            while line.startswith(_COMPLETE):
                _offer_completions(line[len(_COMPLETE):], self.locals)
                line = input()
            return line

    return Console


# Tab completion at the REPL (cmd/wasmpy's tty.go): the host asks with a
# line starting with _COMPLETE, the answer is _COMPLETIONS, a JSON list of
# the names rlcompleter finds for the dotted name before the cursor, and BEL.
_COMPLETE = "\x1b]5379;wasmpy-complete;"
_COMPLETIONS = "\x1b]5379;wasmpy-completions;"


def _offer_completions(before, namespace):
    import json
    import re
    names = []
    text = re.search(r"[\w.]*$", before).group(0)
    if text:
        try:
            import rlcompleter
            completer = rlcompleter.Completer(namespace)
            for state in range(1000):
                name = completer.complete(text, state)
                if name is None:
                    break
                names.append(name)
        except Exception:
            pass
    sys.stdout.write(_COMPLETIONS + json.dumps(names) + "\a")
    sys.stdout.flush()


def _interact(namespace, banner):
    """python3's REPL over stdin, in namespace, until EOF or exit()."""
    sys.ps1, sys.ps2 = ">>> ", "... "
    console = _console_class()(namespace, filename="<stdin>")
    if banner:
        banner = ("Python %s on %s, in the wasmpy sandbox\n"
                  'Type "help", "copyright", "credits" or "license" for more information.'
                  % (sys.version, sys.platform))
    console.interact(banner=banner or "", exitmsg="")


def _run_safely(job, read_source):
    """run, and a report even when the runner itself fails (out of memory
    while reporting, say)."""
    try:
        return run(job, read_source)
    except BaseException as e:
        return {"status": "exception", "type": _type_name(type(e)),
                "message": "the run failed in the sandbox's runner", "exit_code": 1}


def _flush():
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except Exception:
            pass


def main():
    """Entry point of a run in the wasmpy build: job, source and report go
    over host calls. The source comes as raw bytes, not JSON, so that it
    reaches compile() byte for byte and is copied once."""
    job = _Transport.call("_job", None)
    report = _run_safely(job, lambda: _Transport.call("_source", None))
    _flush()
    sys.modules["__main__"] = _entry_main
    _Transport.call("_report", report)


def command_main():
    """Entry point under a plain WASI build: job in argv[1], report on stderr."""
    job = _loads(sys.argv[1])
    report = _run_safely(job, lambda: _unbase64(job.pop("source_base64")))
    _flush()
    # The host finds the report after the run's own nonce, the last line of stderr.
    _stderr("\n" + job["nonce"] + _dumps(report) + "\n")
    _exit(report.get("exit_code", 0))
