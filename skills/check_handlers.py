# Checks skill handlers without running them: stdin is a JSON list of
# {"filename", "source", "function"}; stdout is a JSON list, one entry each:
# {"error": reason} or {"params", "required", "kwargs"} of the function.
import ast
import json
import sys


def check(item):
    name = item["function"]
    try:
        tree = ast.parse(item["source"], item["filename"])
    except SyntaxError as e:
        return {"error": "does not parse: line %s: %s" % (e.lineno, e.msg)}
    except (ValueError, RecursionError, MemoryError) as e:
        return {"error": "does not parse: %s" % e}
    fn = None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            fn = node  # the last definition wins, as at run time
    if fn is None:
        return {"error": "defines no top-level function %r (def %s(...))" % (name, name)}
    if isinstance(fn, ast.AsyncFunctionDef):
        return {"error": "%s is async; a handler is a plain function" % name}
    a = fn.args
    if a.posonlyargs:
        return {"error": "%s has positional-only parameters; arguments are passed by keyword" % name}
    positional = a.args[: len(a.args) - len(a.defaults)]
    required = [p.arg for p in positional]
    required += [p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is None]
    return {"params": [p.arg for p in a.args + a.kwonlyargs],
            "required": required, "kwargs": a.kwarg is not None}


out = []
for item in json.loads(sys.stdin.read()):
    try:
        out.append(check(item))
    except Exception as e:  # a hostile source must not stop the others' checks
        out.append({"error": "cannot check: %s: %s" % (type(e).__name__, e)})
sys.stdout.write(json.dumps(out))
