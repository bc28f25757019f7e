package wasmbin

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
)

// module builds a wasm module from its sections (id, body).
func module(sections ...[]byte) []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range sections {
		out = append(out, s[0])
		out = appendU32(out, uint32(len(s)-1))
		out = append(out, s[1:]...)
	}
	return out
}

var (
	memorySection = []byte{5, 1, 0x00, 1}                   // one memory, min 1 page
	exportMemory  = []byte{7, 1, 3, 'm', 'e', 'm', 0x02, 0} // export "mem"
	dataSection   = []byte{11, 2,
		0x00, 0x41, 16, 0x0b, 3, 'a', 'b', 'c', // active at 16: "abc"
		0x01, 2, 'x', 'y'} // passive: "xy"
)

func TestDropActiveData(t *testing.T) {
	wasm := module(memorySection, exportMemory, dataSection)
	stripped, segs, err := DropActiveData(wasm)
	require.NoError(t, err)
	require.Equal(t, []Segment{{Offset: 16, Data: []byte("abc")}}, segs)

	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	for name, bin := range map[string][]byte{"original": wasm, "stripped": stripped} {
		m, err := rt.InstantiateModule(ctx, mustCompile(t, rt, bin), wazero.NewModuleConfig().WithName(name))
		require.NoError(t, err, name)
		got, _ := m.Memory().Read(16, 3)
		want := map[string]string{"original": "abc", "stripped": "\x00\x00\x00"}[name]
		require.Equal(t, want, string(got), name)
	}
}

func TestDropActiveDataRefuses(t *testing.T) {
	twoMutable := []byte{6, 2, 0x7f, 1, 0x41, 0, 0x0b, 0x7f, 1, 0x41, 0, 0x0b}
	for name, wasm := range map[string][]byte{
		"not wasm":         []byte("hello world"),
		"truncated":        module(memorySection, dataSection)[:20],
		"two mutable":      module(twoMutable),
		"global offset":    module(memorySection, []byte{11, 1, 0x00, 0x23, 0, 0x0b, 0}),
		"bad flags":        module(memorySection, []byte{11, 1, 0x07}),
		"segment too long": module(memorySection, []byte{11, 1, 0x01, 50, 'x'}),
		"section too long": append([]byte("\x00asm\x01\x00\x00\x00"), 11, 100, 0),
		"runaway leb":      append([]byte("\x00asm\x01\x00\x00\x00"), 11, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
		"bad const opcode": module(memorySection, []byte{11, 1, 0x00, 0x99, 0x0b, 0}),
	} {
		_, _, err := DropActiveData(wasm)
		require.Error(t, err, name)
	}
}

func FuzzDropActiveData(f *testing.F) {
	f.Add(module(memorySection, exportMemory, dataSection))
	f.Fuzz(func(t *testing.T, wasm []byte) {
		DropActiveData(wasm) // must not panic
	})
}

func mustCompile(t *testing.T, rt wazero.Runtime, wasm []byte) wazero.CompiledModule {
	cm, err := rt.CompileModule(context.Background(), wasm)
	require.NoError(t, err)
	return cm
}
