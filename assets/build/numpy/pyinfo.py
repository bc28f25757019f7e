"""Run meson's python_info.py with the native build Python and make its answer
describe the wasm32-wasi CPython instead: its headers (the cross build's
pyconfig.h, the source's Include/) and its extension suffix.

    pyinfo.py PYINC python_info.py ARGS...   (PYINC holds cross/ and Include/)
"""
import json
import subprocess
import sys

pyinc = sys.argv[1]
out = subprocess.run([sys.executable] + sys.argv[2:], check=True,
                     capture_output=True, text=True).stdout
info = json.loads(out)
inc, plat = pyinc + "/Include", pyinc + "/cross"
info["variables"]["INCLUDEPY"] = inc
for k in ("paths", "sysconfig_paths", "install_paths"):
    if isinstance(info.get(k), dict):
        if "include" in info[k]:
            info[k]["include"] = inc
        if "platinclude" in info[k]:
            info[k]["platinclude"] = plat
info["variables"]["EXT_SUFFIX"] = ".cpython-313-wasm32-wasi.so"
info["variables"]["SOABI"] = "cpython-313-wasm32-wasi"
info["suffix"] = ".cpython-313-wasm32-wasi.so"
info["link_libpython"] = False
print(json.dumps(info))
