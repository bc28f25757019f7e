package fuel

import "fmt"

// Section ids of WebAssembly 2.0.
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
	secTag       = 13
)

// sectionOrder lists the non-custom sections in the order a module must
// have them.
var sectionOrder = [...]byte{
	secType, secImport, secFunction, secTable, secMemory, secGlobal,
	secExport, secStart, secElement, secDataCount, secCode, secData,
}

var sectionNames = [...]string{
	secCustom: "custom", secType: "type", secImport: "import", secFunction: "function",
	secTable: "table", secMemory: "memory", secGlobal: "global", secExport: "export",
	secStart: "start", secElement: "element", secCode: "code", secData: "data",
	secDataCount: "data count", secTag: "tag",
}

// module is what Instrument learns about its input.
type module struct {
	sections         [secDataCount + 1]*reader // payload of each section present, by id
	types            []funcType                // each type, as in the input
	funcTypes        []uint32                  // type of each defined function
	importedFuncs    uint32
	importedGlobals  uint32
	definedGlobals   uint32
	memories         uint32 // imported and defined
	importedMemories uint32
	exports          uint32
	dataCount        int64 // -1 without a data count section

	refuel     *Refuel
	refuelFunc int64 // index of the imported refuel function; -1 before it is found
	refuelType funcType
}

// funcType is a function type: its parameter types and number of results.
type funcType struct {
	params  []byte
	results uint32
}

// splitSections checks the header and the section framing of wasm and
// records the payload of each non-custom section. Custom sections are
// skipped.
func (m *module) splitSections(wasm []byte) error {
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return errorf(0, "not a WebAssembly binary module (bad magic)")
	}
	if string(wasm[4:8]) != "\x01\x00\x00\x00" {
		return errorf(4, "unsupported binary version % x (want 01 00 00 00)", wasm[4:8])
	}
	r := &reader{b: wasm, pos: 8, end: len(wasm)}
	rank := -1
	for !r.done() {
		at := r.pos
		id, err := r.byte()
		if err != nil {
			return err
		}
		size, err := r.u32()
		if err != nil {
			return err
		}
		payload, err := r.window(size, "section")
		if err != nil {
			return err
		}
		if id == secCustom {
			if _, err := payload.name(); err != nil {
				return fmt.Errorf("custom section: %w", err)
			}
			continue
		}
		if id == secTag {
			return errorf(at, "unsupported tag section (exception handling)")
		}
		if int(id) >= len(m.sections) {
			return errorf(at, "unknown section id %d", id)
		}
		rk := sectionRank(id)
		if rk <= rank {
			return errorf(at, "%s section out of order or repeated", sectionNames[id])
		}
		rank = rk
		m.sections[id] = payload
	}
	return nil
}

func sectionRank(id byte) int {
	for i, s := range sectionOrder {
		if s == id {
			return i
		}
	}
	return -1
}

// parse checks every non-custom section but the code section, and collects
// what instrumenting the code needs.
func (m *module) parse() error {
	m.dataCount = -1
	parsers := [...]struct {
		id    byte
		parse func(*reader) error
	}{
		{secType, m.parseTypes},
		{secImport, m.parseImports},
		{secFunction, m.parseFunctions},
		{secTable, parseTables},
		{secMemory, m.parseMemories},
		{secGlobal, m.parseGlobals},
		{secExport, m.parseExports},
		{secStart, parseStart},
		{secElement, parseElements},
		{secDataCount, m.parseDataCount},
		{secData, m.parseData},
	}
	for _, p := range parsers {
		r := m.sections[p.id]
		if r == nil {
			continue
		}
		r = &reader{b: r.b, pos: r.pos, end: r.end} // keep the section's window intact for the output
		if err := p.parse(r); err != nil {
			return fmt.Errorf("%s section: %w", sectionNames[p.id], err)
		}
		if err := r.expectEnd(sectionNames[p.id] + " section"); err != nil {
			return err
		}
	}
	if m.dataCount > 0 && m.sections[secData] == nil {
		return errorf(m.sections[secDataCount].pos, "the data count section says %d data segments, but there is no data section", m.dataCount)
	}
	return nil
}

func (m *module) parseTypes(r *reader) error {
	n, err := r.count(3, "type")
	if err != nil {
		return err
	}
	m.types = make([]funcType, 0, n)
	for i := uint32(0); i < n; i++ {
		at := r.pos
		form, err := r.byte()
		if err != nil {
			return err
		}
		if form != 0x60 {
			return errorf(at, "unsupported type form %#x (only function types are)", form)
		}
		params, err := valTypes(r)
		if err != nil {
			return err
		}
		t := funcType{params: r.b[r.pos-int(params) : r.pos]}
		if t.results, err = valTypes(r); err != nil {
			return err
		}
		m.types = append(m.types, t)
	}
	return nil
}

// valTypes checks a vec(valtype) and returns its length.
func valTypes(r *reader) (uint32, error) {
	n, err := r.count(1, "value type")
	if err != nil {
		return 0, err
	}
	for i := uint32(0); i < n; i++ {
		if !validValType(r.b[r.pos+int(i)]) {
			return 0, errorf(r.pos+int(i), "unsupported value type %#x", r.b[r.pos+int(i)])
		}
	}
	r.pos += int(n)
	return n, nil
}

func (m *module) typeIndex(r *reader) (uint32, error) {
	at := r.pos
	t, err := r.u32()
	if err == nil && t >= uint32(len(m.types)) {
		err = errorf(at, "type index %d out of range (%d types)", t, len(m.types))
	}
	return t, err
}

func (m *module) parseImports(r *reader) error {
	n, err := r.count(4, "import")
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		module, err := r.name()
		if err != nil {
			return err
		}
		name, err := r.name()
		if err != nil {
			return err
		}
		at := r.pos
		kind, err := r.byte()
		if err != nil {
			return err
		}
		switch kind {
		case 0x00: // function
			var t uint32
			t, err = m.typeIndex(r)
			if err == nil && m.refuel != nil && m.refuelFunc < 0 && module == m.refuel.Module && name == m.refuel.Name {
				m.refuelFunc, m.refuelType = int64(m.importedFuncs), m.types[t]
				err = m.checkRefuelType(at, m.refuelType)
			}
			m.importedFuncs++
		case 0x01: // table
			err = table(r)
		case 0x02: // memory
			err = limits(r, true)
			m.memories++
			m.importedMemories++
		case 0x03: // global
			err = globalType(r)
			m.importedGlobals++
		default:
			err = errorf(at, "unsupported import kind %#x", kind)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkRefuelType accepts a refuel function whose parameters a charge can
// pass as constant zeros.
func (m *module) checkRefuelType(at int, t funcType) error {
	for _, p := range t.params {
		if p != 0x7f && p != 0x7e {
			return errorf(at, "refuel function %s.%s takes a parameter of type %#x (only i32 and i64 are supported)", m.refuel.Module, m.refuel.Name, p)
		}
	}
	return nil
}

func (m *module) parseFunctions(r *reader) error {
	n, err := r.count(1, "function")
	if err != nil {
		return err
	}
	m.funcTypes = make([]uint32, n)
	for i := range m.funcTypes {
		if m.funcTypes[i], err = m.typeIndex(r); err != nil {
			return err
		}
	}
	return nil
}

func parseTables(r *reader) error {
	n, err := r.count(3, "table")
	for i := uint32(0); i < n && err == nil; i++ {
		err = table(r)
	}
	return err
}

func table(r *reader) error {
	t, err := r.byte()
	if err != nil {
		return err
	}
	if !validRefType(t) {
		return errorf(r.pos-1, "unsupported table element type %#x", t)
	}
	return limits(r, false)
}

func (m *module) parseMemories(r *reader) error {
	n, err := r.count(2, "memory")
	for i := uint32(0); i < n && err == nil; i++ {
		err = limits(r, true)
		m.memories++
	}
	return err
}

// limits checks table or memory limits. Memories may be shared (threads);
// 64-bit memories and tables are not supported.
func limits(r *reader, memory bool) error {
	at := r.pos
	flags, err := r.byte()
	if err != nil {
		return err
	}
	if flags > 3 || (!memory && flags > 1) {
		return errorf(at, "unsupported limits flags %#x", flags)
	}
	if _, err := r.u32(); err != nil {
		return err
	}
	if flags&1 != 0 {
		_, err = r.u32()
	}
	return err
}

func globalType(r *reader) error {
	t, err := r.byte()
	if err != nil {
		return err
	}
	if !validValType(t) {
		return errorf(r.pos-1, "unsupported global type %#x", t)
	}
	mut, err := r.byte()
	if err == nil && mut > 1 {
		err = errorf(r.pos-1, "invalid global mutability %#x", mut)
	}
	return err
}

func (m *module) parseGlobals(r *reader) error {
	n, err := r.count(3, "global")
	if err != nil {
		return err
	}
	m.definedGlobals = n
	for i := uint32(0); i < n && err == nil; i++ {
		if err = globalType(r); err == nil {
			err = constExpr(r)
		}
	}
	return err
}

// constExpr checks a constant expression: the constant instructions of
// WebAssembly 2.0 and of the extended-const proposal, up to an end.
func constExpr(r *reader) error {
	for {
		at := r.pos
		op, err := r.byte()
		if err != nil {
			return err
		}
		switch op {
		case opEnd:
			return nil
		case 0x41: // i32.const
			_, err = r.sleb(32)
		case 0x42: // i64.const
			_, err = r.sleb(64)
		case 0x43: // f32.const
			err = r.skip(4)
		case 0x44: // f64.const
			err = r.skip(8)
		case 0x23, 0xd2: // global.get, ref.func
			_, err = r.u32()
		case 0xd0: // ref.null
			var t byte
			if t, err = r.byte(); err == nil && !validRefType(t) {
				err = errorf(r.pos-1, "unsupported heap type %#x", t)
			}
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // i32/i64 add, sub, mul
		case 0xfd: // v128.const
			var sub uint32
			if sub, err = r.u32(); err == nil {
				if sub != 0x0c {
					return errorf(at, "instruction %#x %d not allowed in a constant expression", op, sub)
				}
				err = r.skip(16)
			}
		default:
			return errorf(at, "instruction %#x not allowed in a constant expression", op)
		}
		if err != nil {
			return err
		}
	}
}

func (m *module) parseExports(r *reader) error {
	n, err := r.count(3, "export")
	if err != nil {
		return err
	}
	m.exports = n
	for i := uint32(0); i < n; i++ {
		at := r.pos
		name, err := r.name()
		if err != nil {
			return err
		}
		if name == GlobalName {
			return errorf(at, "the module already exports %q (instrumented twice?)", GlobalName)
		}
		kind, err := r.byte()
		if err != nil {
			return err
		}
		if kind > 3 {
			return errorf(r.pos-1, "unsupported export kind %#x", kind)
		}
		if _, err := r.u32(); err != nil {
			return err
		}
	}
	return nil
}

func parseStart(r *reader) error {
	_, err := r.u32()
	return err
}

func parseElements(r *reader) error {
	n, err := r.count(3, "element segment")
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		at := r.pos
		flags, err := r.u32()
		if err != nil {
			return err
		}
		if flags > 7 {
			return errorf(at, "invalid element segment flags %d", flags)
		}
		// Bit 0: passive or declarative; bit 1: explicit table index (when
		// active) or declarative; bit 2: elements are expressions.
		active := flags&1 == 0
		if active && flags&2 != 0 {
			if _, err := r.u32(); err != nil { // table index
				return err
			}
		}
		if active {
			if err := constExpr(r); err != nil { // offset
				return err
			}
		}
		if !active || flags&2 != 0 { // an element kind or type follows
			t, err := r.byte()
			if err != nil {
				return err
			}
			if flags&4 == 0 && t != 0x00 {
				return errorf(r.pos-1, "invalid element kind %#x", t)
			}
			if flags&4 != 0 && !validRefType(t) {
				return errorf(r.pos-1, "unsupported element type %#x", t)
			}
		}
		k, err := r.count(1, "element")
		if err != nil {
			return err
		}
		for j := uint32(0); j < k; j++ {
			if flags&4 != 0 {
				err = constExpr(r)
			} else {
				_, err = r.u32() // function index
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *module) parseDataCount(r *reader) error {
	n, err := r.u32()
	m.dataCount = int64(n)
	return err
}

func (m *module) parseData(r *reader) error {
	at := r.pos
	n, err := r.count(2, "data segment")
	if err != nil {
		return err
	}
	if m.dataCount >= 0 && int64(n) != m.dataCount {
		return errorf(at, "%d data segments, but the data count section says %d", n, m.dataCount)
	}
	for i := uint32(0); i < n; i++ {
		at := r.pos
		flags, err := r.u32()
		if err != nil {
			return err
		}
		switch flags {
		case 0: // active, memory 0
			err = constExpr(r)
		case 1: // passive
		case 2: // active, explicit memory
			if _, err = r.u32(); err == nil {
				err = constExpr(r)
			}
		default:
			err = errorf(at, "invalid data segment flags %d", flags)
		}
		if err != nil {
			return err
		}
		size, err := r.u32()
		if err != nil {
			return err
		}
		if _, err := r.window(size, "data segment"); err != nil {
			return err
		}
	}
	return nil
}
