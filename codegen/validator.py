"""wasmpy codegen validator: checks Python source with the ast module.

Runs inside the sandbox as an ordinary job. The source to check arrives as
data (one JSON object on stdin) and is parsed, never executed. Input:

  {"items": [{"id": str, "code": str, "mode": "exec" | "eval" | "signature",
              "allow_imports": [str] | null, "forbidden_names": [str],
              "forbid_dunder": bool, "require_call": str, "require_def": str,
              "params": [str] | null, "call": {"args": [...], "kwargs": {...}} | null}]}

Output, one JSON object on stdout:

  {"items": [{"id": str, "findings": [{"line", "col", "rule", "message"}],
              "imports": [str], "unavailable": [str], "function": str,
              "signature": {...} | null, "parts": {...} | null, "quality": {...} | null}]}

"unavailable" lists the imports the interpreter does not carry, when the
item asks with "report_unavailable": true.

A "signature" item reports the def line's parts ("signature": name, the
parameters typed and plain, each parameter, the return annotation, the
docstring's sections, the doctest examples) and, given "call", whether the
arguments bind to it (rule "call"). An "exec" item with require_def reports
the function's "parts" (the code before and after it, its body without the
docstring, its docstring's sections) and its "quality" (size, cyclomatic
complexity, type hints, docstring); with "params" it checks that the def
keeps those parameter names.

Rules: syntax, import (outside allow_imports), name (a forbidden builtin),
dunder (dunder names and attributes, frame introspection), result
(require_call is never called), function (require_def is not defined, or
its parameters differ), call (the arguments do not fit the signature).
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


def check_signature(code, call):
    """A def line (and docstring), with or without a body.

    Returns (findings, function node)."""
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
            if call is not None:
                problem = bind(node, call)
                if problem:
                    return [{"line": node.lineno, "col": 1, "rule": "call", "message": problem}], node
            return [], node
    return [{"line": 1, "col": 1, "rule": "function",
             "message": "no function: the signature must be a def line, e.g. def add(a: int, b: int) -> int:"}], None


def bind(node, call):
    """Why call's arguments do not fit the def node, or "".

    A stub with the same parameters (no annotations, no defaults' values, no
    body) is defined and its signature asked, so nothing of the user's code
    runs."""
    import inspect
    args = ast.arguments(
        posonlyargs=[ast.arg(a.arg) for a in node.args.posonlyargs],
        args=[ast.arg(a.arg) for a in node.args.args],
        vararg=node.args.vararg and ast.arg(node.args.vararg.arg),
        kwonlyargs=[ast.arg(a.arg) for a in node.args.kwonlyargs],
        kw_defaults=[d and ast.Constant(None) for d in node.args.kw_defaults],
        kwarg=node.args.kwarg and ast.arg(node.args.kwarg.arg),
        defaults=[ast.Constant(None) for _ in node.args.defaults])
    stub = ast.Module(body=[ast.FunctionDef(name=node.name, args=args, body=[ast.Pass()],
                                            decorator_list=[], returns=None, type_params=[])],
                      type_ignores=[])
    ns = {}
    exec(compile(ast.fix_missing_locations(stub), "<signature>", "exec"), ns)
    try:
        inspect.signature(ns[node.name]).bind(*call.get("args", []), **call.get("kwargs", {}))
    except TypeError as e:
        return "the arguments do not fit %s%s: %s" % (node.name, ast.unparse(node.args).join("()"), e)
    return ""


SECTIONS = {"args": "args", "arguments": "args", "parameters": "args", "params": "args",
            "returns": "returns", "return": "returns", "yields": "returns",
            "raises": "raises", "examples": "examples", "example": "examples"}


def doc_sections(doc):
    """Splits a Google-style docstring: description, args (name -> text),
    returns, raises, examples (the text of those sections)."""
    out = {"description": "", "args": {}, "returns": "", "raises": "", "examples": ""}
    if not doc:
        return out
    import inspect
    lines = inspect.cleandoc(doc).splitlines()
    current, parts = "description", {"description": []}
    for line in lines:
        head = line.strip().rstrip(":").lower()
        if line.strip().endswith(":") and not line.startswith(" ") and head in SECTIONS:
            current = SECTIONS[head]
            parts.setdefault(current, [])
            continue
        if current != "description" and line.strip() and not line.startswith(" "):
            current = "description"  # a section's text is indented: this line is past it
        parts.setdefault(current, []).append(line)
    for key, body in parts.items():
        text = "\n".join(body).strip("\n")
        if key == "returns":
            # "int: the sum" names the type, which the template writes itself.
            head, sep, rest = text.strip().partition(":")
            if sep and head and all(ch.isalnum() or ch in "_[], .|" for ch in head):
                text = rest
        if key != "args":
            out[key] = inspect.cleandoc(text) if text.strip() else ""
            continue
        name = None
        for line in body:
            stripped = line.strip()
            if not stripped:
                continue
            indent = len(line) - len(line.lstrip())
            head, sep, rest = stripped.partition(":")
            if sep and (name is None or indent <= args_indent):
                name, args_indent = head.split("(")[0].strip().lstrip("*"), indent
                out["args"][name] = rest.strip()
            elif name is not None:
                out["args"][name] = (out["args"][name] + " " + stripped).strip()
    return out


def describe_signature(node):
    """The parts of a def line the templates render."""
    def params(a, typed):
        if not typed:
            a = ast.arguments(**{f: getattr(a, f) for f in a._fields})
            for group in (a.posonlyargs, a.args, a.kwonlyargs):
                for i, p in enumerate(group):
                    group[i] = ast.arg(p.arg)
            a.vararg = a.vararg and ast.arg(a.vararg.arg)
            a.kwarg = a.kwarg and ast.arg(a.kwarg.arg)
        return ast.unparse(a)
    a = node.args
    each = []
    for p in a.posonlyargs + a.args + ([a.vararg] if a.vararg else []) + a.kwonlyargs + ([a.kwarg] if a.kwarg else []):
        each.append({"name": p.arg, "annotation": ast.unparse(p.annotation) if p.annotation else ""})
    doc = ast.get_docstring(node, clean=True) or ""
    examples = 0
    if ">>>" in doc:
        import doctest
        examples = len(doctest.DocTestParser().get_examples(doc))
    return {"name": node.name, "typed": params(a, True), "plain": params(a, False), "params": each,
            "returns": ast.unparse(node.returns) if node.returns else "",
            "docstring": doc, "sections": doc_sections(doc), "doctests": examples}


def complexity(fn):
    """McCabe's cyclomatic complexity of a function: 1 + its decision points
    (nested functions count toward their own)."""
    n = 1
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, (ast.If, ast.IfExp, ast.For, ast.AsyncFor, ast.While, ast.ExceptHandler,
                             ast.Assert, ast.match_case)):
            n += 1
        elif isinstance(node, ast.BoolOp):
            n += len(node.values) - 1
        elif isinstance(node, ast.comprehension):
            n += 1 + len(node.ifs)
        stack.extend(ast.iter_child_nodes(node))
    return n


def reindent(lines):
    """The lines with their common indentation made four spaces: the
    template's docstring is indented so, and a block must agree."""
    lines = [line.rstrip() for line in lines]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    common = min((len(line) - len(line.lstrip()) for line in lines if line), default=0)
    return "\n".join("    " + line[common:] if line else "" for line in lines)


def code_lines(code, tree):
    """Lines that hold code: not blank, not only a comment, not a docstring."""
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and ast.get_docstring(node):
            doc = node.body[0]
            docs.update(range(doc.lineno, doc.end_lineno + 1))
    return sum(1 for i, line in enumerate(code.splitlines(), 1)
               if i not in docs and line.strip() and not line.strip().startswith("#"))


def describe_function(code, tree, fn):
    """The parts of the generated code the final template renders, and the
    function's quality."""
    lines = code.splitlines()
    body = fn.body
    doc = ast.get_docstring(fn, clean=True) or ""
    if doc:
        body = body[1:]
    first = body[0] if body else None
    if first is None:
        body_src = "    pass"
    else:
        # From the line after the docstring (comments included), else the first statement.
        start = fn.body[0].end_lineno + 1 if doc else min(
            [first.lineno] + [d.lineno for d in getattr(first, "decorator_list", [])])
        body_src = reindent(lines[start - 1:fn.end_lineno])
    start = min([fn.lineno] + [d.lineno for d in fn.decorator_list])
    before = "\n".join(lines[:start - 1]).strip("\n")
    after = "\n".join(lines[fn.end_lineno:]).strip("\n")
    a = fn.args
    every = a.posonlyargs + a.args + ([a.vararg] if a.vararg else []) + a.kwonlyargs + ([a.kwarg] if a.kwarg else [])
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    quality = {
        "lines": code_lines(code, tree),
        "statements": sum(1 for n in ast.walk(tree) if isinstance(n, ast.stmt)),
        "complexity": complexity(fn),
        "max_complexity": max(complexity(f) for f in functions),
        "type_hints": fn.returns is not None and all(p.annotation is not None for p in every),
        "docstring": bool(doc),
    }
    parts = {"before": before, "after": after, "body": body_src, "decorated": bool(fn.decorator_list),
             "sections": doc_sections(doc)}
    return parts, quality


def check(item):
    code, mode = item.get("code", ""), item.get("mode", "exec")
    out = {"id": item.get("id", ""), "findings": [], "imports": [], "unavailable": [], "function": "",
           "signature": None, "parts": None, "quality": None}
    if mode == "signature":
        out["findings"], node = check_signature(code, item.get("call"))
        if node is not None:
            out["function"] = node.name
            out["signature"] = describe_signature(node)
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
        else:
            fn = defs[-1]
            a = fn.args
            got = [p.arg for p in a.posonlyargs + a.args + ([a.vararg] if a.vararg else [])
                   + a.kwonlyargs + ([a.kwarg] if a.kwarg else [])]
            want_params = item.get("params")
            if want_params is not None and got != want_params:
                c.add(fn, "function", "the def line must keep the signature's parameters (%s), not (%s)"
                      % (", ".join(want_params), ", ".join(got)))
            out["parts"], out["quality"] = describe_function(code, tree, fn)
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
