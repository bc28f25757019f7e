;; The "env" module ops.wasm imports its global from.
(module (global (export "g0") i32 (i32.const 42)))
