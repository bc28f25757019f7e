package wasmpy_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
)

// The standard library is laid out as a native install's: sources beside
// their bytecode in a real (read-only) directory, sys._stdlib_dir.
func TestStdlibLayout(t *testing.T) {
	for _, tc := range []struct{ name, code, stdout string }{
		{"stdlib dir", `
import os, sys, json, importlib.util
print(sys._stdlib_dir, os.path.isdir(sys._stdlib_dir))
print(os.path.dirname(os.__file__) == sys._stdlib_dir, os.path.exists(os.__file__))
print(json.__file__, os.path.exists(json.__cached__))
print(importlib.util.find_spec("json.decoder").origin)
`, "/usr/local/lib/python3.13 True\nTrue True\n/usr/local/lib/python3.13/json/__init__.py True\n" +
			"/usr/local/lib/python3.13/json/decoder.py\n"},
		{"packages once left out", `
import venv, __phello__, __hello__, importlib.resources as r
print(venv.EnvBuilder.__name__, __phello__.initialized, __hello__.initialized)
print(r.files("venv").joinpath("scripts/common/activate").read_text().startswith("# This file must be used"))
`, "EnvBuilder True True\nTrue\n"},
		{"importlib.resources.files() with no argument", `
import importlib.resources as r
g = {"__name__": "email"}  # code running in the email package
exec("import importlib.resources as r\nhere = r.files()", g)
print(g["here"] == r.files("email"), g["here"].name, g["here"].joinpath("architecture.rst").is_file())
`, "True email True\n"},
		{"source lines", `
import inspect, json, linecache, traceback
try:
    json.loads("{")
except ValueError as e:
    text = "".join(traceback.format_exception(e))
print("return _default_decoder.decode(s)" in text, 'File "/usr/local/lib/python3.13/json/decoder.py"' in text)
print(inspect.getsource(json.dumps).startswith("def dumps("))
print(linecache.getline(json.__file__, 1).startswith('r"""JSON'))
`, "True True\nTrue\nTrue\n"},
		{"errors of paths through a file", `
import errno, os
for op in (os.stat, os.listdir, os.unlink, os.rmdir, lambda p: open(p), lambda p: os.mkdir(p)):
    try:
        op(os.__file__ + "/x")
    except OSError as e:
        print(errno.errorcode[e.errno], end=" ")
try:
    os.stat(os.path.join(os.path.dirname(os.__file__), "nowhere", "x"))
except OSError as e:
    print(errno.errorcode[e.errno])
`, "ENOTDIR ENOTDIR ENOTDIR ENOTDIR ENOTDIR ENOTDIR ENOENT\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, wasmpy.Job{Code: tc.code})
			require.Nil(t, res.Error, res.Stderr)
			require.Equal(t, tc.stdout, res.Stdout)
		})
	}
}
