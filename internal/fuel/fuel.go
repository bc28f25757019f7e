// Package fuel meters the work a WebAssembly module does by rewriting it:
// Instrument adds a fuel counter that the module's own code decrements and
// that stops the module, with a trap, when it runs out.
//
// The counter is a mutable i64 global exported as [GlobalName]. It starts at
// zero, so the host sets the budget before running anything, reads what is
// left afterwards, and tells exhaustion from other traps by the counter being
// negative:
//
//	wasm, err := fuel.Instrument(original, nil)
//	...
//	mod, err := rt.InstantiateModule(ctx, compiled, cfg.WithStartFunctions())
//	counter := mod.ExportedGlobal(fuel.GlobalName).(api.MutableGlobal)
//	counter.Set(uint64(budget))
//	_, err = mod.ExportedFunction("_start").Call(ctx)
//	left := int64(counter.Get()) // < 0: out of fuel; the trap is err
//	used := budget - left
//
// An instance that ran out of fuel stopped at an arbitrary point: discard it.
// Because the counter starts at zero, a module whose start function calls or
// loops traps while being instantiated; clang's WASI commands and reactors
// have none. A call may also return with the counter a little below zero,
// its work done (see Checks): that is exhaustion too, for whatever runs next.
//
// # Refuelling
//
// With a [Refuel] function, a charge that takes the counter below zero
// calls it (an import of the module, every parameter zero, its results
// dropped) instead of trapping, and goes on when it returns. The host then
// hands out the budget in slices: it settles what the last slice paid for,
// sets the next one, and stops the module (a Go host function panics) when
// the budget is spent or the run must end for another reason. The stop
// point is the same as with the whole budget at once. The call is also a
// point where the Go runtime regains the goroutine: wasm code cannot be
// preempted, and a long-running module would otherwise hold up every
// stop-the-world of the garbage collector until it returns.
//
// # What one unit of fuel is
//
// Fuel is charged at charge points: the entry of every function the module
// defines, and every loop header, each time it is reached (so every
// iteration of a loop, the first included). A charge pays, in advance, for
// the run that starts at its charge point: the instructions executed next, in
// order, up to the first one after which execution may not simply continue
// with the following instruction. A run ends after if, else, br, br_if,
// br_table, return, return_call, return_call_indirect, unreachable or the
// function's final end, and just before the next loop (whose own charge
// takes over). It continues through block, through the end of any block,
// loop or if, and over calls: a callee pays for itself.
//
// A charge is one unit per instruction of its run, except for the structural
// instructions and those that do no work, which are free: nop, drop, block,
// loop, end, else, unreachable and return (the set Wasmtime's fuel also
// leaves free). A prefixed instruction (0xFC, 0xFD SIMD, 0xFE atomics) is one
// unit. A charge is at least one unit, so every call and every loop
// iteration costs something; a charge point whose run costs nothing and
// leads straight into a loop header is left out, as that loop's charge
// follows at once.
//
// So one unit is one executed wasm instruction of a run that begins at a
// function entry or a loop header. Code past the end of a run (the arms of an
// if, what follows a br_if that is not taken, the targets of branches) is
// not charged until the next charge point: fuel counts a subset of the
// executed instructions, chosen statically, and therefore is deterministic:
// the same code on the same inputs (what host functions return included)
// uses the same fuel, on any engine and machine. On CPython it is about half
// of the executed instructions that are not free (print(1), interpreter
// start included: 123 million units; one iteration of
// `for i in range(n): s+=i`: 2,600).
//
// Without passing a charge point, code can neither go back (that needs a
// loop header) nor call deeper (that needs a function entry), so what runs
// between two charges is bounded by the size of the bodies on the call
// stack, and exhausting fuel bounds the execution. Time spent in host
// functions, and the size of bulk memory and table operations (memory.copy,
// memory.fill, table.grow, ...), cost nothing beyond their one unit.
//
// # Checks
//
// A charge checks the counter (and traps or refuels below zero), except at
// the entry of a function that calls nothing: such a function runs at most
// its body (its loops check on their own) and returns, and the caller's next
// check sees the debt. Execution between two checks stays bounded, and the
// fuel counted is the same; the check's call would have made every such
// function a caller, which costs wazero's compiled code a frame and spills
// (2.4% of the machine instructions of a logging benchmark).
//
// # Stop checks
//
// [InstrumentChecks] makes a form that counts nothing and can be stopped
// from outside: at every point where a charge would check the counter, it
// tests a stop flag, the first 32-bit word of a one-page memory it adds
// after the module's own (exported as [StopMemoryName]; the module's code
// never addresses it, so the module cannot clear it), and traps with
// unreachable once the flag is nonzero. The host sets the flag from any
// thread, and the module stops within the same bounded work between two
// checks as a metered module does. The engine must support multi-memory.
// A check is a load, a compare and a branch: with no call in the loop, a
// compiler keeps the loop's values in registers, which a refuel call, or an
// engine's own interruption callback, does not let it do.
//
// # What Instrument accepts
//
// WebAssembly 2.0 binaries (multi-value, reference types, bulk memory,
// saturating truncation, sign extension, SIMD) plus the threads, tail-call,
// extended-const and multi-memory encodings: what clang emits for CPython.
// Exception handling, typed function references, GC, relaxed SIMD and
// memory64 are rejected, as are functions with more than 49,999 locals.
// Instrument checks the binary encoding of the whole module, not its
// validity: a module with, say, a type error stays invalid. Custom sections,
// including names and DWARF, are dropped.
package fuel

import "fmt"

// GlobalName is the export name of the fuel counter, a mutable i64 global.
const GlobalName = "wasmpy_fuel"

// StopMemoryName is the export name of the stop flag's memory in a module
// instrumented by [InstrumentChecks].
const StopMemoryName = "wasmpy_stop"

// Refuel names the imported function a charge calls when the counter drops
// below zero (see Refuelling in the package documentation). Its parameters
// must be i32 or i64.
type Refuel struct{ Module, Name string }

// Instrument returns a copy of the binary module wasm with fuel metering
// added (see the package documentation), or an error naming the first
// problem and its offset in wasm when the module is malformed or uses a
// feature this package does not support. wasm is not modified. With a nil
// refuel, a charge that takes the counter below zero traps.
func Instrument(wasm []byte, refuel *Refuel) ([]byte, error) {
	out, err := instrument(wasm, refuel, false)
	if err != nil {
		return nil, fmt.Errorf("fuel: %w", err)
	}
	return out, nil
}

// InstrumentChecks returns a copy of wasm that counts nothing but can be
// stopped from outside (see Stop checks in the package documentation), or
// an error as Instrument's. wasm is not modified.
func InstrumentChecks(wasm []byte) ([]byte, error) {
	out, err := instrument(wasm, nil, true)
	if err != nil {
		return nil, fmt.Errorf("fuel: %w", err)
	}
	return out, nil
}

// stopMemoryLimits is the stop memory's type: one page, never more.
var stopMemoryLimits = []byte{0x01, 0x01, 0x01}

func instrument(wasm []byte, refuel *Refuel, checks bool) ([]byte, error) {
	m := module{refuel: refuel, refuelFunc: -1}
	if err := m.splitSections(wasm); err != nil {
		return nil, err
	}
	if err := m.parse(); err != nil {
		return nil, err
	}
	if refuel != nil && m.refuelFunc < 0 {
		return nil, errorf(0, "the module imports no function %s.%s to refuel", refuel.Module, refuel.Name)
	}
	fuelGlobal := uint64(m.importedGlobals) + uint64(m.definedGlobals)
	if fuelGlobal >= 1<<32-1 { // cannot happen: each global takes bytes
		return nil, errorf(0, "too many globals to add one")
	}

	if checks && m.memories >= 1<<32-1 {
		return nil, errorf(0, "too many memories to add one")
	}
	code, err := m.instrumentCode(uint32(fuelGlobal), checks)
	if err != nil {
		return nil, err
	}

	type outSection struct {
		id      byte
		payload []byte
	}
	var sections []outSection
	size := 8
	for _, id := range sectionOrder {
		r := m.sections[id]
		var payload []byte
		switch {
		case id == secGlobal && !checks:
			// count+1, the existing globals, then: i64 mutable, init i64.const 0.
			payload = appendU32(nil, m.definedGlobals+1)
			payload = append(payload, m.afterCount(r)...)
			payload = append(payload, 0x7e, 0x01, opI64Const, 0x00, opEnd)
		case id == secMemory && checks:
			// count+1, the existing memories, then the stop memory.
			payload = appendU32(nil, m.memories-m.importedMemories+1)
			payload = append(payload, m.afterCount(r)...)
			payload = append(payload, stopMemoryLimits...)
		case id == secExport:
			if m.exports == 1<<32-1 {
				return nil, errorf(0, "too many exports to add one")
			}
			payload = appendU32(nil, m.exports+1)
			payload = append(payload, m.afterCount(r)...)
			if checks {
				payload = appendName(payload, StopMemoryName)
				payload = append(payload, 0x02) // memory
				payload = appendU32(payload, m.memories)
			} else {
				payload = appendName(payload, GlobalName)
				payload = append(payload, 0x03) // global
				payload = appendU32(payload, uint32(fuelGlobal))
			}
		case id == secCode:
			if r == nil {
				continue
			}
			payload = code
		default:
			if r == nil {
				continue
			}
			payload = r.b[r.pos:r.end]
		}
		if uint64(len(payload)) > 1<<32-1 {
			return nil, errorf(0, "%s section grows past 4 GiB", sectionNames[id])
		}
		sections = append(sections, outSection{id, payload})
		size += 6 + len(payload)
	}

	out := make([]byte, 0, size)
	out = append(out, wasm[:8]...)
	for _, s := range sections {
		out = append(out, s.id)
		out = appendU32(out, uint32(len(s.payload)))
		out = append(out, s.payload...)
	}
	return out, nil
}

// afterCount returns the payload of a vector section past its element count
// (parse has checked it), or nothing when the section is absent.
func (m *module) afterCount(r *reader) []byte {
	if r == nil {
		return nil
	}
	r = &reader{b: r.b, pos: r.pos, end: r.end}
	_, _ = r.u32()
	return r.b[r.pos:r.end]
}

// instrumentCode returns the payload of the instrumented code section, nil
// when the module has no code section.
func (m *module) instrumentCode(fuelGlobal uint32, checks bool) ([]byte, error) {
	r := m.sections[secCode]
	if r == nil {
		if len(m.funcTypes) != 0 {
			return nil, errorf(0, "%d functions declared but no code section", len(m.funcTypes))
		}
		return nil, nil
	}
	r = &reader{b: r.b, pos: r.pos, end: r.end}
	at := r.pos
	n, err := r.count(1, "function body")
	if err != nil {
		return nil, fmt.Errorf("code section: %w", err)
	}
	if int(n) != len(m.funcTypes) {
		return nil, errorf(at, "code section has %d bodies for %d declared functions", n, len(m.funcTypes))
	}
	c := codeRewriter{numTypes: uint32(len(m.types)), fuelGlobal: fuelGlobal, checks: checks, stopMemory: m.memories}
	if m.refuelFunc >= 0 {
		c.outOfFuel = refuelCall(uint32(m.refuelFunc), m.refuelType)
	}
	// A charge is about 20 bytes: CPython's code section grows by about 6%.
	out := make([]byte, 0, (r.end-r.pos)+(r.end-r.pos)/8)
	out = appendU32(out, n)
	var body []byte
	for i := uint32(0); i < n; i++ {
		size, err := r.u32()
		if err != nil {
			return nil, fmt.Errorf("code section: %w", err)
		}
		w, err := r.window(size, "function body")
		if err != nil {
			return nil, fmt.Errorf("code section: %w", err)
		}
		if body, err = c.function(body[:0], w, uint32(len(m.types[m.funcTypes[i]].params))); err != nil {
			return nil, fmt.Errorf("code section: function %d: %w", m.importedFuncs+i, err)
		}
		if uint64(len(body)) > 1<<32-1 {
			return nil, errorf(w.pos, "function %d grows past 4 GiB", m.importedFuncs+i)
		}
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	if err := r.expectEnd("code section"); err != nil {
		return nil, err
	}
	return out, nil
}
