package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/runs"
)

// probeModules are the modules a model most often reaches for; the tool
// descriptions name those this interpreter can import, found by importing
// them, so a description never promises what a build lacks.
var probeModules = []string{"numpy", "sqlite3", "decimal", "fractions", "statistics", "math", "random",
	"json", "csv", "re", "datetime", "zoneinfo", "collections", "itertools", "functools", "dataclasses",
	"hashlib", "base64", "struct", "zlib", "bz2", "lzma", "difflib", "textwrap", "unicodedata", "asyncio"}

const probeCode = `import importlib, sys
ok = []
for m in MODULES:
    try:
        importlib.import_module(m)
        ok.append(m)
    except Exception:
        pass
submit_result({"version": sys.version.split()[0], "modules": ok})
`

// describeSandbox says, for a model, what a run_python call gets: the
// interpreter, the modules and packages it can import, its limits, and
// what it cannot do.
func describeSandbox(ctx context.Context, ex *runs.Executor, ceil wasmpy.Limits) (string, error) {
	lim, err := appliedLimits(ex, ceil)
	if err != nil {
		return "", fmt.Errorf("mcpserver: %w", err)
	}
	mods, _ := json.Marshal(probeModules)
	res, err := ex.Checker().Run(ctx, wasmpy.Job{Code: strings.Replace(probeCode, "MODULES", string(mods), 1),
		Filename: "<probe>", Grants: []wasmpy.Capability{wasmpy.SubmitResult}, Limits: wasmpy.Limits{Timeout: time.Minute}})
	if err != nil {
		return "", fmt.Errorf("mcpserver: probing the interpreter: %w", err)
	}
	var probe struct {
		Version string   `json:"version"`
		Modules []string `json:"modules"`
	}
	if err := res.Err(); err != nil {
		return "", fmt.Errorf("mcpserver: probing the interpreter: %w", err)
	}
	if err := json.Unmarshal(res.Output, &probe); err != nil {
		return "", fmt.Errorf("mcpserver: probing the interpreter: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The sandbox is CPython %s compiled to WebAssembly (WASI), one fresh instance per call. ", probe.Version)
	fmt.Fprintf(&b, "It has the standard library (importable here, among others: %s). ", strings.Join(probe.Modules, ", "))
	var dists []string
	for _, set := range ex.Checker().Packages() {
		dists = append(dists, set.Distributions...)
	}
	if len(dists) > 0 {
		fmt.Fprintf(&b, "Third-party packages: %s. ", strings.Join(dists, ", "))
	} else {
		b.WriteString("No third-party packages beyond those listed; pip is not available. ")
	}
	b.WriteString("There is no network (no sockets, no HTTP), no subprocesses, " +
		"and no host file system: only the session's workspace, the working directory /workspace. ")
	fmt.Fprintf(&b, "Limits per call: %s wall clock, %d MiB of memory, %d MiB of output per stream",
		lim.Timeout, lim.Memory>>20, max(lim.Output, 0)>>20)
	if lim.Fuel > 0 {
		fmt.Fprintf(&b, ", %d fuel (a deterministic instruction budget)", lim.Fuel)
	}
	b.WriteString("; a call may ask for less.")
	return b.String(), nil
}

// instructions are the server's initialize instructions.
func instructions(about string, skillsOnly bool) string {
	if skillsOnly {
		return "wasmpy serves vetted Python skills, each a tool with its own schemas, run in a sandbox. " + about
	}
	return "wasmpy runs untrusted Python safely. Use run_python to compute, parse, transform or check data " +
		"(session_create keeps Python state from one call to the next); use write_file to hand it inputs and " +
		"read_file to fetch what it wrote. " + about
}
