"""wasmpy codegen validator: checks Python source with the ast module.

Runs inside the sandbox as an ordinary job. The source to check arrives as
data (one JSON object on stdin) and is parsed, never executed. Input:

  {"items": [{"id": str, "code": str, "mode": "exec" | "eval" | "signature",
              "allow_imports": [str] | null, "forbidden_names": [str],
              "forbid_dunder": bool, "require_call": str, "require_def": str}]}

Output, one JSON object on stdout:

  {"items": [{"id": str, "findings": [{"line", "col", "rule", "message"}],
              "imports": [str], "unavailable": [str], "function": str}]}

"unavailable" lists the imports the interpreter does not carry, when the
item asks with "report_unavailable": true.

Rules: syntax, import (outside allow_imports), name (a forbidden builtin),
dunder (dunder names and attributes, frame introspection), result
(require_call is never called), function (require_def is not defined).
"""
import ast
import json
import sys

MAX_FINDINGS = 50

# Dunder names and attributes that ordinary code uses and that reach nothing
# of the interpreter's internals.
SAFE_DUNDER_NAMES = {"__name__", "__doc__", "__file__"}
SAFE_DUNDER_ATTRS = {
    "__init__", "__new__", "__post_init__", "__name__", "__qualname__", "__doc__",
    "__module__", "__repr__", "__str__", "__format__", "__len__", "__iter__",
    "__next__", "__contains__", "__getitem__", "__setitem__", "__delitem__",
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__",
    "__bool__", "__enter__", "__exit__", "__call__", "__add__", "__sub__",
    "__mul__", "__truediv__", "__floordiv__", "__mod__", "__neg__", "__abs__",
}
# Attributes that walk from an object to frames, code and globals.
INTROSPECTION_ATTRS = {
    "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "tb_frame",
    "tb_next", "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame",
    "ag_code", "co_code", "co_consts",
}
ATTR_FUNCS = {"getattr", "setattr", "delattr", "hasattr"}


def is_dunder(name):
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


class Checker(ast.NodeVisitor):
    def __init__(self, item):
        self.allow = item.get("allow_imports")
        self.allow_text = ", ".join(sorted(set(self.allow or ())))
        if self.allow is not None:
            self.allow = set(self.allow) | {"wasmpy"}
        self.forbidden = set(item.get("forbidden_names") or ())
        self.dunder = bool(item.get("forbid_dunder"))
        self.require_call = item.get("require_call") or ""
        self.called = False
        self.findings = []
        self.imports = []

    def add(self, node, rule, message):
        self.findings.append({"line": getattr(node, "lineno", 1),
                              "col": getattr(node, "col_offset", 0) + 1,
                              "rule": rule, "message": message})

    def imported(self, node, module):
        top = module.partition(".")[0]
        if top not in self.imports:
            self.imports.append(top)
        if self.allow is not None and top not in self.allow:
            self.add(node, "import", "import of %r is not allowed; the allowed modules are: %s"
                     % (top, self.allow_text or "none"))

    def visit_Import(self, node):
        for alias in node.names:
            self.imported(node, alias.name)
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        if node.level:
            self.add(node, "import", "relative imports are not available: the code is a single module")
        elif node.module:
            self.imported(node, node.module)
        self.generic_visit(node)

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load):
            if node.id in self.forbidden:
                self.add(node, "name", "%s is not allowed in this sandbox" % node.id)
            elif self.dunder and is_dunder(node.id) and node.id not in SAFE_DUNDER_NAMES:
                self.add(node, "dunder", "the name %s is not allowed: dunder names reach "
                         "interpreter internals" % node.id)
        self.generic_visit(node)

    def check_attr(self, node, attr):
        if not self.dunder:
            return
        if is_dunder(attr) and attr not in SAFE_DUNDER_ATTRS:
            self.add(node, "dunder", "the attribute %s is not allowed: dunder attributes "
                     "reach interpreter internals" % attr)
        elif attr in INTROSPECTION_ATTRS:
            self.add(node, "dunder", "the attribute %s is not allowed: it reaches frames, "
                     "code or globals" % attr)

    def visit_Attribute(self, node):
        self.check_attr(node, node.attr)
        self.generic_visit(node)

    def visit_Call(self, node):
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        if name and name == self.require_call:
            self.called = True
        if (isinstance(f, ast.Name) and f.id in ATTR_FUNCS and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            self.check_attr(node, node.args[1].value)
        self.generic_visit(node)


def parse(code, mode):
    """Returns (tree, finding): one of them is None.

    The tree is compiled too (never run), for the errors only the compiler
    finds, such as 'return' outside a function."""
    try:
        tree = ast.parse(code, "<generated>", mode)
        compile(tree, "<generated>", mode, dont_inherit=True)
        return tree, None
    except SyntaxError as e:
        msg = e.msg or "invalid syntax"
        return None, {"line": e.lineno or 1, "col": e.offset or 0, "rule": "syntax", "message": msg}
    except (ValueError, RecursionError, MemoryError) as e:
        return None, {"line": 1, "col": 0, "rule": "syntax", "message": "cannot parse: %s" % e}


def check_signature(code):
    """A def line (and docstring), with or without a body."""
    tree, finding = parse(code, "exec")
    if tree is None:
        tree, _ = parse(code.rstrip() + "\n    ...\n", "exec")
        if tree is None:
            return [finding], None
    for node in tree.body:
        if isinstance(node, ast.AsyncFunctionDef):
            return [{"line": node.lineno, "col": 1, "rule": "function",
                     "message": "async functions are not supported: use def"}], None
        if isinstance(node, ast.FunctionDef):
            return [], node.name
    return [{"line": 1, "col": 1, "rule": "function",
             "message": "no function: the signature must be a def line, e.g. def add(a: int, b: int) -> int:"}], None


def check(item):
    code, mode = item.get("code", ""), item.get("mode", "exec")
    out = {"id": item.get("id", ""), "findings": [], "imports": [], "unavailable": [], "function": ""}
    if mode == "signature":
        out["findings"], out["function"] = check_signature(code)
        return out
    tree, finding = parse(code, mode)
    if tree is None:
        out["findings"] = [finding]
        return out
    c = Checker(item)
    try:
        c.visit(tree)
    except RecursionError:
        c.add(tree, "syntax", "the code is nested too deeply to check")
    want = item.get("require_def") or ""
    if want:
        defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == want]
        if not defs:
            c.add(tree, "function", "the code does not define the function %s at the top level" % want)
        elif isinstance(defs[0], ast.AsyncFunctionDef):
            c.add(defs[0], "function", "%s must be a plain def, not async def" % want)
    if c.require_call and not c.called:
        last = max((getattr(n, "end_lineno", 1) or 1 for n in tree.body), default=1)
        c.findings.append({"line": last, "col": 1, "rule": "result",
                           "message": "the code never calls %s(value): hand the answer back with it" % c.require_call})
    c.findings.sort(key=lambda f: (f["line"], f["col"]))
    out["findings"] = c.findings[:MAX_FINDINGS]
    out["imports"] = c.imports
    if item.get("report_unavailable"):
        out["unavailable"] = [m for m in c.imports if not available(m)]
    return out


def available(name):
    """Whether the sandbox has the module: the standard library, or a package set's."""
    if not all(part.isidentifier() for part in name.split(".")):
        return False
    if name in sys.modules:
        return True
    import importlib.util
    try:
        return importlib.util.find_spec(name) is not None
    except Exception:
        return False


def main():
    req = json.loads(sys.stdin.read())
    out = {"items": [check(item) for item in req.get("items", [])]}
    sys.stdout.write(json.dumps(out) + "\n")


main()
