package fuel

// immediate says how an instruction's immediates are encoded.
type immediate uint8

const (
	immInvalid    immediate = iota // not an opcode this package accepts
	immNone                        // no immediates
	immBlockType                   // s33 block type
	immIndex                       // one u32 index
	immIndex2                      // two u32 indices
	immBrTable                     // vec(label) label
	immMemArg                      // memarg
	immMemArgLane                  // memarg, lane index byte
	immLane                        // lane index byte
	immI32                         // s32
	immI64                         // s64
	immBytes4                      // f32
	immBytes8                      // f64
	immBytes16                     // v128.const, i8x16.shuffle
	immSelectT                     // vec(valtype)
	immHeapType                    // ref.null's reference type
	immZeroByte                    // atomic.fence's reserved 0x00
	immPrefix                      // 0xFC, 0xFD, 0xFE: a u32 sub-opcode follows
)

// Instruction flags.
const (
	// flagFree marks an instruction that costs no fuel: the structural ones
	// and those that do no work, the same set Wasmtime's fuel leaves free.
	flagFree uint8 = 1 << iota
	// flagEndsRun marks an instruction after which execution may not simply
	// continue with the next instruction: a charge covers nothing past it.
	flagEndsRun
	// flagOpens marks block, loop and if: a matching end follows.
	flagOpens
	// flagCalls marks the calls, tail calls included.
	flagCalls
)

// opInfo describes one opcode.
type opInfo struct {
	imm   immediate
	flags uint8
}

// Opcodes the rewriter itself looks at or emits.
const (
	opUnreachable   = 0x00
	opLoop          = 0x03
	opIf            = 0x04
	opEnd           = 0x0b
	opCall          = 0x10
	opDrop          = 0x1a
	opLocalGet      = 0x20
	opLocalTee      = 0x22
	opGlobalGet     = 0x23
	opGlobalSet     = 0x24
	opAtomicPrefix  = 0xfe
	opI32AtomicLoad = 0x10 // after opAtomicPrefix
	opI32Const      = 0x41
	opI64Const      = 0x42
	opI64LtS        = 0x53
	opI64Sub        = 0x7d
	blockTypeNone   = 0x40 // the empty block type
)

// Value types accepted in types, locals and block types: those of
// WebAssembly 2.0 (i32 i64 f32 f64 v128 funcref externref).
func validValType(b byte) bool {
	switch b {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		return true
	}
	return false
}

func validRefType(b byte) bool { return b == 0x70 || b == 0x6f }

// ops describes the single-byte opcodes; fcOps, fdOps and feOps the
// sub-opcodes of the 0xFC (saturating truncation, bulk memory, tables), 0xFD
// (SIMD) and 0xFE (threads) prefixes. Everything else is rejected, including
// the exception-handling, typed-function-reference, GC, relaxed-SIMD and
// memory64 proposals, which neither clang's output for CPython nor wazero's
// default features need.
var ops, fcOps, fdOps, feOps = buildOpTables()

func buildOpTables() (ops [256]opInfo, fc [18]opInfo, fd [256]opInfo, fe [0x4f]opInfo) {
	set := func(t []opInfo, lo, hi int, imm immediate, flags uint8) {
		for i := lo; i <= hi; i++ {
			t[i] = opInfo{imm, flags}
		}
	}
	o := ops[:]
	set(o, 0x00, 0x00, immNone, flagFree|flagEndsRun)       // unreachable
	set(o, 0x01, 0x01, immNone, flagFree)                   // nop
	set(o, 0x02, 0x03, immBlockType, flagFree|flagOpens)    // block, loop
	set(o, 0x04, 0x04, immBlockType, flagEndsRun|flagOpens) // if
	set(o, 0x05, 0x05, immNone, flagFree|flagEndsRun)       // else
	set(o, 0x0b, 0x0b, immNone, flagFree)                   // end
	set(o, 0x0c, 0x0d, immIndex, flagEndsRun)               // br, br_if
	set(o, 0x0e, 0x0e, immBrTable, flagEndsRun)             // br_table
	set(o, 0x0f, 0x0f, immNone, flagFree|flagEndsRun)       // return
	set(o, 0x10, 0x10, immIndex, flagCalls)                 // call
	set(o, 0x11, 0x11, immIndex2, flagCalls)                // call_indirect
	set(o, 0x12, 0x12, immIndex, flagEndsRun|flagCalls)     // return_call
	set(o, 0x13, 0x13, immIndex2, flagEndsRun|flagCalls)    // return_call_indirect
	set(o, 0x1a, 0x1a, immNone, flagFree)                   // drop
	set(o, 0x1b, 0x1b, immNone, 0)                          // select
	set(o, 0x1c, 0x1c, immSelectT, 0)                       // select t*
	set(o, 0x20, 0x26, immIndex, 0)                         // local.*, global.*, table.get/set
	set(o, 0x28, 0x3e, immMemArg, 0)                        // loads and stores
	set(o, 0x3f, 0x40, immIndex, 0)                         // memory.size, memory.grow
	set(o, 0x41, 0x41, immI32, 0)                           // i32.const
	set(o, 0x42, 0x42, immI64, 0)                           // i64.const
	set(o, 0x43, 0x43, immBytes4, 0)                        // f32.const
	set(o, 0x44, 0x44, immBytes8, 0)                        // f64.const
	set(o, 0x45, 0xc4, immNone, 0)                          // numeric, incl. sign extension
	set(o, 0xd0, 0xd0, immHeapType, 0)                      // ref.null
	set(o, 0xd1, 0xd1, immNone, 0)                          // ref.is_null
	set(o, 0xd2, 0xd2, immIndex, 0)                         // ref.func
	set(o, 0xfc, 0xfe, immPrefix, 0)                        // prefixes

	c := fc[:]
	set(c, 0x00, 0x07, immNone, 0)   // iNN.trunc_sat_fMM_s/u
	set(c, 0x08, 0x08, immIndex2, 0) // memory.init data mem
	set(c, 0x09, 0x09, immIndex, 0)  // data.drop
	set(c, 0x0a, 0x0a, immIndex2, 0) // memory.copy mem mem
	set(c, 0x0b, 0x0b, immIndex, 0)  // memory.fill mem
	set(c, 0x0c, 0x0c, immIndex2, 0) // table.init elem table
	set(c, 0x0d, 0x0d, immIndex, 0)  // elem.drop
	set(c, 0x0e, 0x0e, immIndex2, 0) // table.copy table table
	set(c, 0x0f, 0x11, immIndex, 0)  // table.grow, table.size, table.fill

	d := fd[:]
	set(d, 0x00, 0x0b, immMemArg, 0)     // v128.load*, v128.store
	set(d, 0x0c, 0x0d, immBytes16, 0)    // v128.const, i8x16.shuffle
	set(d, 0x0e, 0x14, immNone, 0)       // swizzle, splats
	set(d, 0x15, 0x22, immLane, 0)       // extract_lane, replace_lane
	set(d, 0x23, 0x53, immNone, 0)       // comparisons, bitwise
	set(d, 0x54, 0x5b, immMemArgLane, 0) // v128.loadN_lane, v128.storeN_lane
	set(d, 0x5c, 0x5d, immMemArg, 0)     // v128.load32_zero, v128.load64_zero
	set(d, 0x5e, 0xff, immNone, 0)       // arithmetic, conversions
	for _, unassigned := range []int{
		0x9a, 0xa2, 0xa5, 0xa6, 0xaf, 0xb0, 0xb2, 0xb3, 0xb4, 0xbb,
		0xc2, 0xc5, 0xc6, 0xcf, 0xd0, 0xd2, 0xd3, 0xd4, 0xe2, 0xee,
	} {
		d[unassigned] = opInfo{}
	}

	e := fe[:]
	set(e, 0x00, 0x02, immMemArg, 0)   // memory.atomic.notify, wait32, wait64
	set(e, 0x03, 0x03, immZeroByte, 0) // atomic.fence
	set(e, 0x10, 0x4e, immMemArg, 0)   // atomic loads, stores, read-modify-writes
	return ops, fc, fd, fe
}

// maxLocals bounds the locals of one function, parameters and the added
// local included. It is the limit of the JS API and of the major engines;
// without it a forged local count would make a runtime allocate gigabytes.
const maxLocals = 50000

// run is the straight-line code one charge pays for.
type run struct {
	at     int   // module offset the charge goes before: after the locals, or after a loop's block type
	cost   int64 // counted instructions in the run
	toLoop bool  // the run ended at a loop header: if it cost nothing, the loop's charge stands for it
}

// codeRewriter instruments function bodies, reusing its scratch space.
type codeRewriter struct {
	numTypes   uint32
	fuelGlobal uint32
	outOfFuel  []byte // what a charge does below zero; nil: unreachable
	runs       []run
	// checks: check the stop flag in memory stopMemory instead of
	// charging (InstrumentChecks).
	checks     bool
	stopMemory uint32
}

// refuelCall is the call of the refuel function fn of type t: zeros for its
// parameters, the call, a drop for each result.
func refuelCall(fn uint32, t funcType) []byte {
	var b []byte
	for _, p := range t.params {
		if p == 0x7e {
			b = append(b, opI64Const, 0)
		} else {
			b = append(b, opI32Const, 0)
		}
	}
	b = append(b, opCall)
	b = appendU32(b, fn)
	for range t.results {
		b = append(b, opDrop)
	}
	return b
}

// function appends the instrumented body of one function to dst. r is a
// window over the body (locals and expression), params the function's
// parameter count.
func (c *codeRewriter) function(dst []byte, r *reader, params uint32) ([]byte, error) {
	// Locals: vec(count valtype).
	entries, err := r.count(2, "local entry")
	if err != nil {
		return nil, err
	}
	entriesStart := r.pos
	total := uint64(params) + 1 // the parameters and the added i64
	for i := uint32(0); i < entries; i++ {
		at := r.pos
		n, err := r.u32()
		if err != nil {
			return nil, err
		}
		t, err := r.byte()
		if err != nil {
			return nil, err
		}
		if !validValType(t) {
			return nil, errorf(r.pos-1, "unsupported local type %#x", t)
		}
		if total += uint64(n); total > maxLocals {
			return nil, errorf(at, "too many locals: more than %d", maxLocals-1)
		}
	}
	localsEnd := r.pos
	tmpLocal := uint32(total - 1)

	runs, calls, err := c.scan(r)
	if err != nil {
		return nil, err
	}

	if c.checks {
		dst = appendU32(dst, entries)
	} else {
		dst = appendU32(dst, entries+1)
	}
	dst = append(dst, r.b[entriesStart:localsEnd]...)
	if !c.checks {
		dst = append(dst, 0x01, 0x7e) // one more local: i64
	}
	from := localsEnd
	for i, rn := range runs {
		if rn.cost == 0 && rn.toLoop {
			continue // the next loop header follows at once and charges
		}
		dst = append(dst, r.b[from:rn.at]...)
		switch {
		case c.checks && i == 0 && !calls:
			// Nothing: as a debit without its check, the callers' and the
			// loops' checks bound what such a function runs.
		case c.checks:
			dst = c.appendStopCheck(dst)
		case i == 0 && !calls:
			dst = c.appendDebit(dst, max(rn.cost, 1))
		default:
			dst = c.appendCharge(dst, max(rn.cost, 1), tmpLocal)
		}
		from = rn.at
	}
	return append(dst, r.b[from:r.end]...), nil
}

// appendDebit appends a charge without its check, for the entry of a
// function that calls nothing:
//
//	global.get $fuel  i64.const cost  i64.sub  global.set $fuel
//
// Such a function runs at most its body before it returns (its loops charge
// and check on their own), and the caller's next check sees the debt. The
// check's call to refuel would also make every such function a caller: the
// compiler then gives it a frame and spills around the call (2.4% of the
// machine instructions of a logging benchmark under wazero).
func (c *codeRewriter) appendDebit(dst []byte, cost int64) []byte {
	dst = append(dst, opGlobalGet)
	dst = appendU32(dst, c.fuelGlobal)
	dst = append(dst, opI64Const)
	dst = appendS64(dst, cost)
	dst = append(dst, opI64Sub, opGlobalSet)
	return appendU32(dst, c.fuelGlobal)
}

// appendCharge appends the charge sequence:
//
//	global.get $fuel  i64.const cost  i64.sub  local.tee $tmp  global.set $fuel
//	local.get $tmp  i64.const 0  i64.lt_s  if  unreachable  end
//
// or, with a refuel function, its call (see refuelCall) in the if.
//
// Wasm has no global.tee, hence the local. The sequence leaves the operand
// stack as it found it, so it is valid at any instruction boundary.
func (c *codeRewriter) appendCharge(dst []byte, cost int64, tmp uint32) []byte {
	dst = append(dst, opGlobalGet)
	dst = appendU32(dst, c.fuelGlobal)
	dst = append(dst, opI64Const)
	dst = appendS64(dst, cost)
	dst = append(dst, opI64Sub, opLocalTee)
	dst = appendU32(dst, tmp)
	dst = append(dst, opGlobalSet)
	dst = appendU32(dst, c.fuelGlobal)
	dst = append(dst, opLocalGet)
	dst = appendU32(dst, tmp)
	dst = append(dst, opI64Const, 0, opI64LtS, opIf, blockTypeNone)
	if c.outOfFuel == nil {
		return append(dst, opUnreachable, opEnd)
	}
	return append(append(dst, c.outOfFuel...), opEnd)
}

// appendStopCheck appends the check of the stop flag, the first word of
// the stop memory:
//
//	i32.const 0  i32.atomic.load $stop align=2 offset=0  if  unreachable  end
//
// The load is atomic so that no compiler may take one check's load for
// another's: to the single-threaded program, a plain load in a loop that
// stores nothing reads what the check before the loop read, and an
// optimizer may reuse that value (Cranelift today does not; on amd64 both
// are the same instruction). The memory index goes in the memarg, flagged
// by bit 6 of its alignment field (multi-memory's encoding), even when it
// is 0.
func (c *codeRewriter) appendStopCheck(dst []byte) []byte {
	dst = append(dst, opI32Const, 0, opAtomicPrefix, opI32AtomicLoad, 0x40|2)
	dst = appendU32(dst, c.stopMemory)
	return append(dst, 0x00, opIf, blockTypeNone, opUnreachable, opEnd)
}

// scan decodes the expression of a function body from r and returns its
// runs: the first starting at the function entry, then one per loop header,
// in order; and whether it calls a function.
func (c *codeRewriter) scan(r *reader) (runs []run, calls bool, err error) {
	runs = append(c.runs[:0], run{at: r.pos})
	open := 0 // index of the run being counted, -1 when none is
	depth := 0
	for {
		at := r.pos
		if r.done() {
			if depth == 0 {
				return nil, false, errorf(at, "function body has no final end")
			}
			return nil, false, errorf(at, "function body ends with %d blocks still open", depth+1)
		}
		op := r.b[r.pos]
		r.pos++
		info := ops[op]
		switch info.imm {
		case immInvalid:
			return nil, false, errorf(at, "unknown or unsupported opcode %#x", op)
		case immNone:
		case immPrefix:
			var err error
			if info, err = c.prefixed(r, op); err != nil {
				return nil, false, err
			}
		default:
			if err := c.immediates(r, info.imm); err != nil {
				return nil, false, err
			}
		}

		if open >= 0 && info.flags&flagFree == 0 {
			runs[open].cost++
		}
		if info.flags&flagCalls != 0 {
			calls = true
		}
		switch op {
		case opLoop:
			depth++
			if open >= 0 {
				runs[open].toLoop = true
			}
			runs = append(runs, run{at: r.pos})
			open = len(runs) - 1
			continue
		case opEnd:
			if depth == 0 {
				if !r.done() {
					return nil, false, errorf(r.pos, "%d bytes after the end of the function body", r.end-r.pos)
				}
				c.runs = runs
				return runs, calls, nil
			}
			depth--
		}
		if info.flags&flagOpens != 0 {
			depth++
		}
		if info.flags&flagEndsRun != 0 {
			open = -1
		}
	}
}

// prefixed decodes the sub-opcode and immediates of a 0xFC, 0xFD or 0xFE
// instruction and returns its description.
func (c *codeRewriter) prefixed(r *reader, prefix byte) (opInfo, error) {
	at := r.pos - 1
	sub, err := r.u32()
	if err != nil {
		return opInfo{}, err
	}
	var info opInfo
	switch {
	case prefix == 0xfc && sub < uint32(len(fcOps)):
		info = fcOps[sub]
	case prefix == 0xfd && sub < uint32(len(fdOps)):
		info = fdOps[sub]
	case prefix == 0xfe && sub < uint32(len(feOps)):
		info = feOps[sub]
	}
	if info.imm == immInvalid {
		return opInfo{}, errorf(at, "unknown or unsupported opcode %#x %d", prefix, sub)
	}
	return info, c.immediates(r, info.imm)
}

// immediates skips over immediates of the given kind, checking their
// encoding.
func (c *codeRewriter) immediates(r *reader, imm immediate) error {
	var err error
	switch imm {
	case immNone:
	case immBlockType:
		err = c.blockType(r)
	case immIndex:
		_, err = r.u32()
	case immIndex2:
		if _, err = r.u32(); err == nil {
			_, err = r.u32()
		}
	case immBrTable:
		var n uint32
		if n, err = r.count(1, "br_table label"); err != nil {
			return err
		}
		for i := uint32(0); i <= n && err == nil; i++ { // n labels and the default
			_, err = r.u32()
		}
	case immMemArg:
		err = memArg(r)
	case immMemArgLane:
		if err = memArg(r); err == nil {
			err = r.skip(1)
		}
	case immLane:
		err = r.skip(1)
	case immI32:
		_, err = r.sleb(32)
	case immI64:
		_, err = r.sleb(64)
	case immBytes4:
		err = r.skip(4)
	case immBytes8:
		err = r.skip(8)
	case immBytes16:
		err = r.skip(16)
	case immSelectT:
		var n uint32
		if n, err = r.count(1, "select type"); err != nil {
			return err
		}
		for i := uint32(0); i < n; i++ {
			var t byte
			if t, err = r.byte(); err != nil {
				return err
			}
			if !validValType(t) {
				return errorf(r.pos-1, "unsupported value type %#x in select", t)
			}
		}
	case immHeapType:
		var t byte
		if t, err = r.byte(); err == nil && !validRefType(t) {
			err = errorf(r.pos-1, "unsupported heap type %#x", t)
		}
	case immZeroByte:
		var b byte
		if b, err = r.byte(); err == nil && b != 0 {
			err = errorf(r.pos-1, "expected a zero byte, found %#x", b)
		}
	default: // a bug in the opcode tables
		err = errorf(r.pos, "internal error: no decoder for immediate kind %d", imm)
	}
	return err
}

// blockType checks an s33 block type: empty, one value type, or a type index.
func (c *codeRewriter) blockType(r *reader) error {
	at := r.pos
	if r.pos < r.end {
		if b := r.b[r.pos]; b == blockTypeNone || validValType(b) {
			r.pos++
			return nil
		}
	}
	v, err := r.sleb(33)
	if err != nil {
		return err
	}
	if v < 0 || v >= int64(c.numTypes) {
		return errorf(at, "invalid block type %d", v)
	}
	return nil
}

// memArg checks a memarg: alignment (bit 6 set: a memory index follows, from
// the multi-memory proposal) and a 32-bit offset.
func memArg(r *reader) error {
	align, err := r.u32()
	if err != nil {
		return err
	}
	if align&0x40 != 0 {
		if _, err := r.u32(); err != nil {
			return err
		}
	}
	_, err = r.u32()
	return err
}
