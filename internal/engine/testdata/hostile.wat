;; A hostile interpreter: a WASI command that calls the host functions with
;; counts that overflow and pointers out of range. Every call must fail with
;; an error code, never panic the host. It exits 42 when each call answered
;; as expected, else with the number of the first call that did not. Its
;; memory (2.7 GiB) is large enough that the overflowing counts pass a check
;; of the events' extent alone.
(module
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
  (import "wasmpy" "call" (func $call (param i32 i32 i32 i32 i32 i32) (result i32)))
  (import "wasmpy" "take" (func $take (param i32 i32) (result i32)))
  (memory (export "memory") 44000)
  (func $expect (param $got i32) (param $want i32) (param $step i32)
    (if (i32.ne (local.get $got) (local.get $want))
      (then (call $exit (local.get $step)))))
  (func (export "_start")
    ;; n*48 wraps to 32 in uint32: the subscriptions overrun what was read.
    (call $expect (call $poll (i32.const 0) (i32.const 1024) (i32.const 0x05555556) (i32.const 2048)) (i32.const 21) (i32.const 1))
    ;; n*32 wraps to 0: the events would overrun.
    (call $expect (call $poll (i32.const 0) (i32.const 1024) (i32.const 0x08000000) (i32.const 2048)) (i32.const 21) (i32.const 2))
    ;; The largest count, past the memory.
    (call $expect (call $poll (i32.const 0) (i32.const 1024) (i32.const 0xFFFFFFFF) (i32.const 2048)) (i32.const 21) (i32.const 3))
    ;; Subscriptions, events and the result count out of range.
    (call $expect (call $poll (i32.const 0xFFFFFFF0) (i32.const 1024) (i32.const 1) (i32.const 2048)) (i32.const 21) (i32.const 4))
    (call $expect (call $poll (i32.const 0) (i32.const 0xFFFFFFF0) (i32.const 1) (i32.const 2048)) (i32.const 21) (i32.const 5))
    (call $expect (call $poll (i32.const 0) (i32.const 1024) (i32.const 1) (i32.const 0xFFFFFFFE)) (i32.const 21) (i32.const 6))
    ;; More subscriptions than one poll takes.
    (call $expect (call $poll (i32.const 0) (i32.const 1048576) (i32.const 2000) (i32.const 2048)) (i32.const 28) (i32.const 7))
    ;; The host-call transport: each part of a request out of range or too
    ;; large, lengths that wrap when added, and a response out of range.
    (call $expect (call $call (i32.const 0xFFFFFFF0) (i32.const 64) (i32.const 0) (i32.const 0) (i32.const 0) (i32.const -1)) (i32.const -1) (i32.const 8))
    (call $expect (call $call (i32.const 65000) (i32.const 0x7FFFFFFF) (i32.const 0) (i32.const 0) (i32.const 0) (i32.const -1)) (i32.const -1) (i32.const 9))
    (call $expect (call $call (i32.const 0) (i32.const 4) (i32.const 0xFFFFFFF0) (i32.const 64) (i32.const 0) (i32.const -1)) (i32.const -1) (i32.const 11))
    (call $expect (call $call (i32.const 0) (i32.const 4) (i32.const 0) (i32.const 0) (i32.const 0xFFFFFFF0) (i32.const 64)) (i32.const -1) (i32.const 12))
    (call $expect (call $call (i32.const 0) (i32.const 0x80000000) (i32.const 0) (i32.const 0x80000000) (i32.const 0) (i32.const 0x80000000)) (i32.const -1) (i32.const 13))
    (call $expect (call $call (i32.const 0) (i32.const 4) (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 0xFFFFFFFE)) (i32.const -1) (i32.const 14))
    (call $expect (call $take (i32.const 0xFFFFFFF0) (i32.const 64)) (i32.const -1) (i32.const 10))
    (call $exit (i32.const 42))))
