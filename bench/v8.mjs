// Runs a Python script in wasmpy's own python.wasm under V8 (Node's WASI),
// without fuel: the same binary wasmpy runs under wazero, so the two times
// compare the engines and nothing else. See bench/v8.sh.
//
//   node --no-liftoff bench/v8.mjs PYTHON_WASM PREFIX SCRIPT [ARGS...]
//
// PREFIX is a directory holding lib/python313.zip (the guest's /usr/local);
// SCRIPT's directory is the guest's /app.
import { readFileSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { WASI } from 'node:wasi';

const [wasmPath, prefix, script, ...args] = process.argv.slice(2);
const argv = ['/app/' + basename(script), ...args];
const wasi = new WASI({
  version: 'preview1', args: argv, env: { PYTHONHOME: '/usr/local' }, returnOnExit: false,
  preopens: { '/usr/local': resolve(prefix), '/app': dirname(resolve(script)) },
});
// The host-call imports are never called: the script runs without the runner.
const unused = () => { throw new Error('wasmpy host call outside wasmpy'); };
const { instance } = await WebAssembly.instantiate(readFileSync(wasmPath), {
  wasi_snapshot_preview1: wasi.wasiImport, wasmpy: { call: unused, take: unused },
});
wasi.initialize(instance);
const ex = instance.exports;
ex.Py_InitializeEx(0);
const code = `import sys
sys.argv = ${JSON.stringify(argv)}
sys.path.insert(0, '/app')
try:
    exec(compile(open(sys.argv[0]).read(), sys.argv[0], 'exec'), {'__name__': '__main__'})
finally:
    sys.stdout.flush()
`;
const bytes = new TextEncoder().encode(code + '\0');
const p = ex.malloc(bytes.length);
new Uint8Array(ex.memory.buffer, p, bytes.length).set(bytes);
process.exit(ex.PyRun_SimpleString(p) === 0 ? 0 : 1);
