;; A module exercising the encodings clang emits for CPython: an imported
;; global, SIMD (memargs, lanes, shuffles), 0xFC bulk memory and saturating
;; truncation, the data count section, br_table, typed select,
;; call_indirect, multi-value blocks and nested loops.
(module
  (type $t (func (param i32) (result i32)))
  (import "env" "g0" (global $ig i32))
  (memory 1)
  (table 2 funcref)
  (elem (i32.const 0) $sq $dbl)
  (data $d "\01\02\03\04\05\06\07\08\09\0a\0b\0c\0d\0e\0f\10")
  (global $acc (mut i64) (i64.const 0))
  (func $sq (type $t) (i32.mul (local.get 0) (local.get 0)))
  (func $dbl (type $t) (i32.add (local.get 0) (local.get 0)))
  (func (export "run") (param $n i32) (result i64)
    (local $i i32) (local $j i32) (local $v v128) (local $f f64)
    (global.set $acc (i64.const 0))
    (memory.init $d (i32.const 100) (i32.const 0) (i32.const 16))
    (memory.fill (i32.const 200) (i32.const 7) (i32.const 16))
    (memory.copy (i32.const 300) (i32.const 100) (i32.const 16))
    (local.set $v (v128.load offset=300 align=4 (i32.const 0)))
    (local.set $v (i8x16.shuffle 15 14 13 12 11 10 9 8 7 6 5 4 3 2 1 0
      (local.get $v) (v128.const i32x4 0x80 0x81 0x82 0x83)))
    (local.set $v (i32x4.replace_lane 1 (local.get $v) (i32.const 1000)))
    (local.set $v (v128.load16_lane offset=200 2 (i32.const 0) (local.get $v)))
    (v128.store8_lane offset=400 3 (i32.const 0) (local.get $v))
    (v128.store offset=500 (i32.const 0) (v128.load32_zero offset=300 (i32.const 0)))
    (global.set $acc (i64.extend_i32_u (i32x4.extract_lane 1 (local.get $v))))
    (global.set $acc (i64.add (global.get $acc) (i64.load8_u offset=400 (i32.const 0))))
    (global.set $acc (i64.add (global.get $acc) (i64.load offset=500 (i32.const 0))))
    (global.set $acc (i64.add (global.get $acc)
      (i64.extend_i32_u (i32x4.extract_lane 0 (i32x4.add (local.get $v) (local.get $v))))))
    (local.set $f (f64.const 1.5))
    (block $exit
      (loop $outer
        (br_if $exit (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $j (i32.const 0))
        (loop $inner
          (block $b2 (block $b1 (block $b0
            (br_table $b0 $b1 $b2 (i32.rem_u (local.get $j) (i32.const 3))))
            ;; b0
            (global.set $acc (i64.add (global.get $acc)
              (i64.extend_i32_u (call_indirect (type $t) (local.get $i) (i32.const 0)))))
            (br $b2))
          ;; b1
          (global.set $acc (i64.add (global.get $acc)
            (i64.extend_i32_u (select (result i32)
              (call_indirect (type $t) (local.get $j) (i32.const 1))
              (global.get $ig)
              (i32.and (local.get $j) (i32.const 1)))))))
          (local.set $f (f64.add (local.get $f) (f64.const 0.25)))
          (local.set $j (i32.add (local.get $j) (i32.const 1)))
          (br_if $inner (i32.lt_u (local.get $j) (i32.const 5))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $outer)))
    (block (result i64 i64)
      (global.get $acc)
      (i64.trunc_sat_f64_s (local.get $f)))
    (i64.add)
    (i64.const -123456789012)
    (i64.add)))
