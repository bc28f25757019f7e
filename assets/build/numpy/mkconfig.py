"""Print the cross build's Modules/config.c with the sci variant's extension
modules (numpy's, pandas') added to the builtin table under their dotted names.

    mkconfig.py CONFIG.C MODULES.TXT... > config.c

Each entry calls the module's PyInit through a wrapper that sets CPython's
package context to the dotted name meanwhile, as the shared-library loader
does: CPython 3.13 runs a builtin's PyInit without one, so a single-phase
module (m_name "_multiarray_umath") would get a bare __name__.
"""
import sys

config, lists = sys.argv[1], sys.argv[2:]
mods = [line.split() for modules in lists for line in open(modules)
        if line.strip() and not line.startswith("#")]
for kind, seen in (("module", [n for n, _ in mods]), ("init function", [i for _, i in mods])):
    dups = sorted({x for x in seen if seen.count(x) > 1})
    if dups:
        sys.exit(f"mkconfig: {kind} listed twice: {' '.join(dups)}")
src = open(config).read()
decl = "extern const char *_PyImport_SwapPackageContext(const char *newcontext);\n"
for i, (name, init) in enumerate(mods):
    decl += (f"extern PyObject *{init}(void);\n"
             f"static PyObject *wasmpy_init_{i}(void)\n{{\n"
             f"    const char *old = _PyImport_SwapPackageContext(\"{name}\");\n"
             f"    PyObject *m = {init}();\n"
             f"    _PyImport_SwapPackageContext(old);\n"
             f"    return m;\n}}\n")
entries = "".join(f"    {{\"{name}\", wasmpy_init_{i}}},\n" for i, (name, _) in enumerate(mods))
for marker, text in (("/* -- ADDMODULE MARKER 1 -- */", decl), ("/* -- ADDMODULE MARKER 2 -- */", entries)):
    if marker not in src:
        sys.exit(f"mkconfig: {config} has no {marker}")
    src = src.replace(marker, text + marker, 1)
sys.stdout.write(src)
