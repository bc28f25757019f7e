"""Compile a batch of a package set's modules to bytecode, in the sandbox.

Runs inside the sandbox's own interpreter, so the bytecode is the one it
loads. stdin: {"prefix": DIR, "files": [[path, base64 source], ...]};
stdout: {"tag": cache tag, "pyc": {path: base64 .pyc}, "errors": {path: why}}.
Each .pyc is an unchecked-hash pyc (PEP 552): no timestamp, never
revalidated against its source, so the same source gives the same bytes.
"""
import base64
import importlib._bootstrap_external as bootstrap_external
import importlib.util
import json
import sys

job = json.load(sys.stdin)
out = {"tag": sys.implementation.cache_tag, "pyc": {}, "errors": {}}
for path, b64 in job["files"]:
    source = base64.b64decode(b64)
    try:
        code = compile(source, job["prefix"] + "/" + path, "exec",
                       dont_inherit=True, optimize=0)
    except (SyntaxError, ValueError) as e:
        out["errors"][path] = "%s: %s" % (type(e).__name__, e)
        continue
    data = bootstrap_external._code_to_hash_pyc(
        code, importlib.util.source_hash(source), checked=False)
    out["pyc"][path] = base64.b64encode(data).decode()
json.dump(out, sys.stdout)
