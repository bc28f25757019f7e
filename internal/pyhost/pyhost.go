// Package pyhost holds the guest-side Python of wasmpy: the runner that
// executes one job inside the interpreter and the wasmpy module user code
// imports in the sandbox (wasmpy.py: the capabilities, the exception
// classes, show). That module is not the Python client of the same import
// name (python/wasmpy, pip-installed on the host): the two never share an
// interpreter, and a package set may not bring a "wasmpy" into the sandbox
// (packages.Reserved); RATIONALE.md says why the guest keeps the name. The
// files are plain Python, embedded here and handed to the interpreter by
// the engine (internal/engine).
package pyhost

import (
	_ "embed"
	"encoding/json"
)

var (
	//go:embed runner.py
	runnerSource string
	//go:embed wasmpy.py
	wasmpySource string
	//go:embed hooks.py
	hooksSource string
)

// Bootstrap is the Python source that loads the runner as the module
// _wasmpy_runner and builds the wasmpy module. With the core build it runs
// once before the snapshot; then then is the entry point of each run.
func Bootstrap(then string) string {
	return "import sys, types\n" +
		"_m = types.ModuleType('_wasmpy_runner')\n" +
		"exec(compile(" + pyString(runnerSource) + ", '<wasmpy-runner>', 'exec'), _m.__dict__)\n" +
		"sys.modules['_wasmpy_runner'] = _m\n" +
		"_m.init(" + pyString(wasmpySource) + ")\n" +
		"_h = types.ModuleType('_wasmpy_hooks')\n" +
		"exec(compile(" + pyString(hooksSource) + ", '<wasmpy>', 'exec'), _h.__dict__)\n" +
		"sys.modules['_wasmpy_hooks'] = _h\n" +
		"_h.install()\n" +
		"del _m, _h, sys, types\n" + then
}

// RunMain is what each run of the core build executes, in the module the
// runner keeps as __main__ between runs: its entry, by a name only that
// module holds.
const RunMain = "_wasmpy_entry()\n"

// CommandMain ends the bootstrap under a plain WASI build (python -c).
const CommandMain = "__import__('_wasmpy_runner').command_main()\n"

// pyString quotes s as a Python string literal: a JSON string is one.
func pyString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
