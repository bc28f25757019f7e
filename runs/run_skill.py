# Runs one skill handler. stdin is {"module", "function", "source", "args"}:
# the handler's module is made from its source, the function is called with
# args as keyword arguments, and its return value is the run's result.
import json
import sys
import types


class InvalidOutput(Exception):
    """The handler returned a value that is not JSON."""


def _main():
    req = json.loads(sys.stdin.read())
    name = req["module"]
    mod = types.ModuleType(name)
    mod.__file__ = name + ".py"
    mod.__wasmpy_policed__ = True  # the run's import policy holds the handler too
    sys.modules[name] = mod
    exec(compile(req["source"], mod.__file__, "exec", dont_inherit=True), mod.__dict__)
    fn = getattr(mod, req["function"], None)
    if not callable(fn):
        raise TypeError("%s.%s is not a function" % (name, req["function"]))
    out = fn(**req["args"])
    try:
        json.dumps(out, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InvalidOutput("%s returned a value that is not JSON: %s" % (req["function"], e)) from None
    submit_result(out)


_main()
