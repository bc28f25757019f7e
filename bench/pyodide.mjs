// Pyodide under Node, the yardstick of BENCHMARKS.md beside wasmpy: a fresh
// process's print(1) from start to finish, print(1) again in the same
// (not isolated) interpreter, and the CPU benchmark.
//
//	node bench/pyodide.mjs testdata/bench/cpu.py
import { loadPyodide } from "pyodide";
import { readFileSync } from "node:fs";

const t0 = performance.now();
const py = await loadPyodide({ stdout: () => {} });
py.runPython("print(1)");
const start = performance.now() - t0;

const warm = [];
for (let i = 0; i < 20; i++) {
  const t = performance.now();
  py.runPython("print(1)");
  warm.push(performance.now() - t);
}
warm.sort((a, b) => a - b);

const code = readFileSync(process.argv[2], "utf8");
const cpu = [];
for (let i = 0; i < 5; i++) {
  const t = performance.now();
  py.runPython(code);
  cpu.push(performance.now() - t);
}
cpu.sort((a, b) => a - b);
console.log(JSON.stringify({
  version: py.version,
  start_to_print1_ms: +start.toFixed(1),
  warm_print1_p50_ms: +warm[10].toFixed(3),
  cpu_median_ms: +cpu[2].toFixed(1),
}));
