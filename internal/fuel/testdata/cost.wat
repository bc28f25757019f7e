;; Functions whose fuel is known exactly; fuel_test.go states each cost.
(module
  (type $binop (func (param i32 i32) (result i32)))

  ;; 1: an empty run still costs the minimum charge.
  (func (export "empty"))

  ;; 3: i32.const, i32.const, i32.add.
  (func (export "straight") (result i32)
    i32.const 1
    i32.const 2
    i32.add)

  ;; 5: block and end are free and do not end the run.
  (func (export "blocks") (result i32)
    block (result i32)
      block (result i32)
        i32.const 1
      end
      i32.const 2
      i32.add
    end
    i32.const 3
    i32.add)

  ;; 2: local.get, if; the arms are past the end of the run.
  (func (export "ifelse") (param i32) (result i32)
    local.get 0
    if (result i32)
      i32.const 10
      i32.const 20
      i32.add
    else
      i32.const 2
    end)

  ;; 2: local.get, br_table.
  (func (export "switch") (param i32) (result i32)
    block $c
      block $b
        block $a
          local.get 0
          br_table $a $b $c
        end
        i32.const 100
        return
      end
      i32.const 200
      return
    end
    i32.const 300)

  ;; 1: i32.const; return is free.
  (func (export "early") (result i32)
    i32.const 7
    return)

  ;; 5 here (i32.const, i32.const, call, i32.const, i32.add) + 3 in $add.
  (func $add (type $binop)
    local.get 0
    local.get 1
    i32.add)
  (func (export "call") (result i32)
    i32.const 1
    i32.const 2
    call $add
    i32.const 3
    i32.add)

  ;; 7 per iteration, at least one: the entry leads straight into the loop,
  ;; so only the loop header charges.
  (func (export "count") (param $n i32) (result i32)
    (local $i i32)
    loop $l
      local.get $i
      i32.const 1
      i32.add
      local.tee $i
      local.get $n
      i32.lt_u
      br_if $l
    end
    local.get $i)

  ;; 3 + n*(2 + 11*max(m,1)) for n > 0, 3 for n = 0.
  (func (export "nested") (param $n i32) (param $m i32) (result i32)
    (local $i i32) (local $j i32) (local $s i32)
    block $done
      local.get $n
      i32.eqz
      br_if $done
      loop $outer
        i32.const 0
        local.set $j
        loop $inner
          local.get $s
          i32.const 1
          i32.add
          local.set $s
          local.get $j
          i32.const 1
          i32.add
          local.tee $j
          local.get $m
          i32.lt_u
          br_if $inner
        end
        local.get $i
        i32.const 1
        i32.add
        local.tee $i
        local.get $n
        i32.lt_u
        br_if $outer
      end
    end
    local.get $s)

  ;; 2 + 8n for n > 0: a loop with parameters (a type-index block type);
  ;; returns 1 + 2 + ... + n.
  (func (export "mvsum") (param $n i32) (result i32)
    (local $k i32)
    i32.const 0
    local.get $n
    loop (param i32 i32) (result i32)
      local.tee $k
      i32.add
      local.get $k
      i32.const 1
      i32.sub
      local.tee $k
      local.get $k
      br_if 0
      drop
    end)

  ;; 2: local.get, local.get; a multi-value block.
  (func (export "swap") (param i32 i32) (result i32 i32)
    block (result i32 i32)
      local.get 1
      local.get 0
    end)

  ;; 1 per iteration, forever.
  (func (export "spin")
    loop $l
      br $l
    end)

  ;; Recursion: every call pays its entry charge.
  (func $fib (export "fib") (param $n i32) (result i32)
    local.get $n
    i32.const 2
    i32.lt_u
    if (result i32)
      local.get $n
    else
      local.get $n
      i32.const 1
      i32.sub
      call $fib
      local.get $n
      i32.const 2
      i32.sub
      call $fib
      i32.add
    end)
)
