;; Encodings beyond WebAssembly 2.0 that wazero runs behind experimental
;; flags: threads (shared memory, atomics), tail calls, extended constants.
(module
  (memory 1 1 shared)
  (global $base i32 (i32.add (i32.const 40) (i32.const 2)))

  ;; n + 42, counting down with tail calls.
  (func $down (param $n i32) (param $acc i32) (result i32)
    local.get $n
    i32.eqz
    if (result i32)
      local.get $acc
    else
      local.get $n
      i32.const 1
      i32.sub
      local.get $acc
      i32.const 1
      i32.add
      return_call $down
    end)
  (func (export "tail") (param $n i32) (result i32)
    local.get $n
    global.get $base
    return_call $down)

  ;; Adds n to a cell atomically n times and returns it.
  (func (export "atomics") (param $n i32) (result i32)
    (local $i i32)
    (i32.atomic.store (i32.const 64) (i32.const 0))
    (loop $l
      (drop (i32.atomic.rmw.add (i32.const 64) (local.get $n)))
      (atomic.fence)
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (local.get $n))))
    (drop (memory.atomic.notify (i32.const 64) (i32.const 1)))
    (i32.atomic.load (i32.const 64)))
)
