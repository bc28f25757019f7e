package fuel_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"

	"github.com/wasmpy/wasmpy/internal/fuel"
)

// A tiny builder of binary modules, for inputs wat2wasm would refuse to
// write.

const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secCode      = 10
	secData      = 11
	secDataCount = 12
)

func u32(v uint32) []byte {
	var b []byte
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func module(sections ...[]byte) []byte {
	return cat(append([][]byte{[]byte("\x00asm\x01\x00\x00\x00")}, sections...)...)
}

func section(id byte, parts ...[]byte) []byte {
	p := cat(parts...)
	return cat([]byte{id}, u32(uint32(len(p))), p)
}

func vec(items ...[]byte) []byte { return cat(append([][]byte{u32(uint32(len(items)))}, items...)...) }

func name(s string) []byte { return cat(u32(uint32(len(s))), []byte(s)) }

func funcType(params, results []byte) []byte {
	return cat([]byte{0x60}, u32(uint32(len(params))), params, u32(uint32(len(results))), results)
}

// body returns a size-prefixed function body: locals is the encoded
// vec(count valtype) (nil: none), code the expression with its end.
func body(locals []byte, code ...byte) []byte {
	if locals == nil {
		locals = []byte{0}
	}
	b := cat(locals, code)
	return cat(u32(uint32(len(b))), b)
}

// oneFunc is a module with one function of type [] -> [] and the given body.
func oneFunc(b []byte) []byte {
	return module(section(secType, vec(funcType(nil, nil))),
		section(secFunction, vec([]byte{0})),
		section(secCode, vec(b)))
}

func TestMalformed(t *testing.T) {
	tests := []struct {
		name string
		wasm []byte
		want string
	}{
		{"empty", nil, "bad magic"},
		{"bad magic", []byte("\x00asn\x01\x00\x00\x00"), "bad magic"},
		{"version 2", []byte("\x00asm\x02\x00\x00\x00"), "unsupported binary version"},
		{"component", []byte("\x00asm\x0d\x00\x01\x00"), "unsupported binary version"},
		{"truncated section size", module([]byte{secType, 0x80, 0x80}), "truncated LEB128"},
		{"overlong section size", module([]byte{secType, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}), "overflows 32 bits"},
		{"section size too big", module([]byte{secType, 0x05, 0x01}), "overruns"},
		{"unknown section", module(section(14)), "unknown section id 14"},
		{"tag section", module(section(13, vec())), "tag section"},
		{"sections out of order", module(section(secFunction, vec()), section(secType, vec())), "out of order"},
		{"repeated section", module(section(secType, vec()), section(secType, vec())), "out of order or repeated"},
		{"custom section name overruns", module(section(secCustom, []byte{9, 'a'})), "overruns"},
		{"trailing bytes in section", module(section(secType, vec(), []byte{0})), "unexpected bytes at the end of type section"},
		{"forged type count", module(section(secType, u32(1<<30))), "type count 1073741824 does not fit"},
		{"gc type", module(section(secType, vec([]byte{0x5e, 0x7f, 0x00}))), "unsupported type form 0x5e"},
		{"bad value type", module(section(secType, vec(funcType([]byte{0x63}, nil)))), "unsupported value type 0x63"},
		{"function type out of range", module(section(secType, vec()), section(secFunction, vec([]byte{0}))), "type index 0 out of range"},
		{"memory64", module(section(secMemory, vec([]byte{0x04, 0x01}))), "unsupported limits flags 0x4"},
		{"tag import", module(section(secImport, vec(cat(name("m"), name("t"), []byte{0x04, 0x00, 0x00})))), "unsupported import kind 0x4"},
		{"bad const expr", module(section(secGlobal, vec([]byte{0x7f, 0x00, 0x01, 0x0b}))), "not allowed in a constant expression"},
		{"already instrumented", module(section(secExport, vec(cat(name(fuel.GlobalName), []byte{0x03, 0x00})))), "already exports"},
		{"bad export kind", module(section(secExport, vec(cat(name("x"), []byte{0x04, 0x00})))), "unsupported export kind"},
		{"invalid utf-8 name", module(section(secExport, vec(cat(name("\xff"), []byte{0x00, 0x00})))), "not valid UTF-8"},
		{"data count mismatch", module(section(secDataCount, u32(2)), section(secData, vec(cat([]byte{0x01}, name("ab"))))), "data count section says 2"},
		{"data count without data", module(section(secDataCount, u32(1))), "there is no data section"},
		{"data segment overruns", module(section(secData, vec([]byte{0x01, 0x7f}))), "overruns"},
		{"no code section", module(section(secType, vec(funcType(nil, nil))), section(secFunction, vec([]byte{0}))), "no code section"},
		{"code count mismatch", module(section(secType, vec(funcType(nil, nil))), section(secFunction, vec([]byte{0})), section(secCode, vec())), "0 bodies for 1 declared functions"},
		{"body overruns", oneFunc([]byte{0x09, 0x00, 0x0b}), "overruns"},
		{"unknown opcode", oneFunc(body(nil, 0xff, 0x0b)), "unknown or unsupported opcode 0xff"},
		{"exception handling", oneFunc(body(nil, 0x06, 0x40, 0x0b, 0x0b)), "unknown or unsupported opcode 0x6"},
		{"call_ref", oneFunc(body(nil, 0x14, 0x00, 0x0b)), "unknown or unsupported opcode 0x14"},
		{"unassigned simd opcode", oneFunc(body(nil, 0xfd, 0x9a, 0x01, 0x0b)), "unknown or unsupported opcode 0xfd 154"},
		{"relaxed simd", oneFunc(body(nil, 0xfd, 0x80, 0x02, 0x0b)), "unknown or unsupported opcode 0xfd 256"},
		{"unknown 0xfc", oneFunc(body(nil, 0xfc, 0x12, 0x0b)), "unknown or unsupported opcode 0xfc 18"},
		{"unknown 0xfe", oneFunc(body(nil, 0xfe, 0x04, 0x0b)), "unknown or unsupported opcode 0xfe 4"},
		{"bad fence", oneFunc(body(nil, 0xfe, 0x03, 0x01, 0x0b)), "expected a zero byte"},
		{"no final end", oneFunc(body(nil, 0x01)), "no final end"},
		{"unclosed block", oneFunc(body(nil, 0x02, 0x40, 0x02, 0x40, 0x0b)), "2 blocks still open"},
		{"bytes after end", oneFunc(body(nil, 0x0b, 0x01)), "1 bytes after the end of the function body"},
		{"too many locals", oneFunc(body(vec(cat(u32(50000), []byte{0x7f})), 0x0b)), "too many locals"},
		{"too many locals in total", oneFunc(body(vec(cat(u32(30000), []byte{0x7f}), cat(u32(30000), []byte{0x7e})), 0x0b)), "too many locals"},
		{"forged local entry count", oneFunc(body(u32(1<<32-1), 0x0b)), "local entry count 4294967295 does not fit"},
		{"bad local type", oneFunc(body(vec([]byte{0x01, 0x63}), 0x0b)), "unsupported local type 0x63"},
		{"block type out of range", oneFunc(body(nil, 0x02, 0x05, 0x0b, 0x0b)), "invalid block type 5"},
		{"bad block type", oneFunc(body(nil, 0x02, 0x50, 0x0b, 0x0b)), "invalid block type -48"},
		{"overlong block type", oneFunc(body(nil, 0x02, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x0b, 0x0b)), "longer than 5 bytes"},
		{"i32.const overflows", oneFunc(body(nil, 0x41, 0xff, 0xff, 0xff, 0xff, 0x4f, 0x1a, 0x0b)), "overflows 32 bits"},
		{"i64.const overlong", oneFunc(body(nil, 0x42, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x1a, 0x0b)), "longer than 10 bytes"},
		{"i64.const overflows", oneFunc(body(nil, 0x42, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02, 0x1a, 0x0b)), "overflows 64 bits"},
		{"truncated memarg", oneFunc(body(nil, 0x41, 0x00, 0x28, 0x02)), "truncated LEB128"},
		{"truncated index", oneFunc(body(nil, 0x20, 0x80)), "truncated LEB128"},
		{"forged br_table", oneFunc(body(nil, 0x41, 0x00, 0x0e, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x0b)), "br_table label count"},
		{"truncated v128.const", oneFunc(body(nil, 0xfd, 0x0c, 0x01, 0x02)), "need 16 bytes"},
		{"bad select type", oneFunc(body(nil, 0x1c, 0x01, 0x40, 0x0b)), "unsupported value type 0x40 in select"},
		{"bad heap type", oneFunc(body(nil, 0xd0, 0x63, 0x0b)), "unsupported heap type 0x63"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := fuel.Instrument(tc.wasm, nil)
			require.Error(t, err)
			require.Nil(t, out)
			require.Regexp(t, `^fuel: `, err.Error())
			require.Contains(t, err.Error(), tc.want)
			require.Contains(t, err.Error(), "offset 0x")
		})
	}
}

// TestErrorNamesFunction checks that an error in a body says which function.
func TestErrorNamesFunction(t *testing.T) {
	m := module(
		section(secType, vec(funcType(nil, nil))),
		section(secImport, vec(cat(name("m"), name("f"), []byte{0x00, 0x00}))),
		section(secFunction, vec([]byte{0}, []byte{0})),
		section(secCode, vec(body(nil, 0x0b), body(nil, 0xff, 0x0b))),
	)
	_, err := fuel.Instrument(m, nil)
	require.EqualError(t, err, "fuel: code section: function 2: offset 0x24: unknown or unsupported opcode 0xff")
}

// TestPrefixesAndBitFlips runs the fuzz property over every truncation of
// the test modules and over single-byte changes: a deterministic slice of
// FuzzInstrument that runs on every test.
func TestPrefixesAndBitFlips(t *testing.T) {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().WithCoreFeatures(testFeatures))
	defer rt.Close(ctx)
	for _, name := range []string{"ops.wasm", "cost.wasm", "features.wasm"} {
		orig := readTestdata(t, name)
		for n := range orig {
			checkInstrument(t, rt, orig[:n])
		}
		in := append([]byte(nil), orig...)
		for i := range in {
			for _, v := range []byte{0x00, 0xff, 0x80, 0x7f, orig[i] ^ 0x01, orig[i] ^ 0x40} {
				in[i] = v
				checkInstrument(t, rt, in)
			}
			in[i] = orig[i]
		}
	}
}

// checkInstrument checks the properties Instrument has on any input: it
// does not panic, leaves its input alone, and when it succeeds its output
// compiles unless the input does not compile either, and cannot be
// instrumented again.
func checkInstrument(t testing.TB, rt wazero.Runtime, in []byte) {
	t.Helper()
	ctx := context.Background()
	cp := append([]byte(nil), in...)
	out, err := fuel.Instrument(in, nil)
	require.True(t, bytes.Equal(cp, in), "Instrument modified its input")
	if err != nil {
		require.Nil(t, out)
		return
	}
	cm, err := rt.CompileModule(ctx, out)
	if err == nil {
		_ = cm.Close(ctx)
		_, err = fuel.Instrument(out, nil)
		require.ErrorContains(t, err, "already exports")
		return
	}
	cmIn, errIn := rt.CompileModule(ctx, in)
	if errIn == nil {
		_ = cmIn.Close(ctx)
	}
	require.Error(t, errIn, "the input compiles but its instrumented copy does not: %v\ninput: %x", err, in)
}
