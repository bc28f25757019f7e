;; A loop and a call for refuelling (TestRefuel): "refuel" is the host's.
(module
  (import "host" "refuel" (func $refuel (param i32 i64) (result i32)))

  ;; Counts $n down to zero: each iteration charges the loop header.
  (func $count (export "count") (param $n i32) (result i32)
    (loop $l
      local.get $n
      i32.const 1
      i32.sub
      local.tee $n
      br_if $l)
    local.get $n)

  ;; count, called $k times.
  (func (export "repeat") (param $k i32) (param $n i32)
    (loop $l
      local.get $n
      call $count
      drop
      local.get $k
      i32.const 1
      i32.sub
      local.tee $k
      br_if $l)))
