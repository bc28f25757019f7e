//go:build wasmtime && cgo

package fuel_test

import (
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/bytecodealliance/wasmtime-go/v39"
	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/internal/fuel"
)

// checkedInstance instantiates the checked form of wasm under wasmtime and
// returns it with its stop flag.
func checkedInstance(t *testing.T, wasm []byte) (*wasmtime.Store, *wasmtime.Instance, *uint32) {
	t.Helper()
	out, err := fuel.InstrumentChecks(wasm)
	require.NoError(t, err)
	cfg := wasmtime.NewConfig()
	cfg.SetWasmMultiMemory(true)
	engine := wasmtime.NewEngineWithConfig(cfg)
	mod, err := wasmtime.NewModule(engine, out)
	require.NoError(t, err, "wasmtime rejects the checked form")
	store := wasmtime.NewStore(engine)
	inst, err := wasmtime.NewInstance(store, mod, nil)
	require.NoError(t, err)
	ex := inst.GetExport(store, fuel.StopMemoryName)
	require.NotNil(t, ex)
	mem := ex.Memory()
	require.NotNil(t, mem)
	require.Equal(t, uintptr(65536), mem.DataSize(store), "one page")
	data := mem.UnsafeData(store)
	return store, inst, (*uint32)(unsafe.Pointer(&data[0]))
}

// The checked form computes what the module did; once the flag is set,
// from another goroutine, a loop and a recursion that would not end trap
// at their next check.
func TestChecksUnderWasmtime(t *testing.T) {
	wasm := readTestdata(t, "cost.wasm")
	store, inst, flag := checkedInstance(t, wasm)
	plainStore := wasmtime.NewStore(wasmtime.NewEngine())
	plainMod, err := wasmtime.NewModule(plainStore.Engine, wasm)
	require.NoError(t, err)
	plain, err := wasmtime.NewInstance(plainStore, plainMod, nil)
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		args []any
	}{
		{"straight", nil}, {"blocks", nil}, {"ifelse", []any{int32(1)}}, {"switch", []any{int32(7)}},
		{"call", nil}, {"count", []any{int32(100000)}}, {"nested", []any{int32(7), int32(9)}},
		{"mvsum", []any{int32(10)}}, {"fib", []any{int32(20)}},
	} {
		want, err := plain.GetFunc(plainStore, c.name).Call(plainStore, c.args...)
		require.NoError(t, err, c.name)
		got, err := inst.GetFunc(store, c.name).Call(store, c.args...)
		require.NoError(t, err, c.name)
		require.Equal(t, want, got, c.name)
	}

	for _, c := range []struct {
		name string
		args []any
	}{{"spin", nil}, {"fib", []any{int32(60)}}} {
		atomic.StoreUint32(flag, 0)
		time.AfterFunc(50*time.Millisecond, func() { atomic.StoreUint32(flag, 1) })
		_, err := inst.GetFunc(store, c.name).Call(store, c.args...)
		require.Error(t, err, c.name)
		var trap *wasmtime.Trap
		require.ErrorAs(t, err, &trap, c.name)
		require.NotNil(t, trap.Code())
		require.Equal(t, wasmtime.UnreachableCodeReached, *trap.Code(), c.name)
	}
}

// A module with a memory of its own keeps it as memory 0: the stop memory
// comes after it, and the module's atomics still reach its own; tail
// calls, which pass no check point of their own, still compute.
func TestChecksKeepTheModulesMemory(t *testing.T) {
	store, inst, flag := checkedInstance(t, readTestdata(t, "features.wasm"))
	got, err := inst.GetFunc(store, "atomics").Call(store, int32(100))
	require.NoError(t, err)
	require.Equal(t, int32(100*100), got)
	got, err = inst.GetFunc(store, "tail").Call(store, int32(100000))
	require.NoError(t, err)
	require.Equal(t, int32(100000+42), got)
	require.Zero(t, atomic.LoadUint32(flag), "the module's own stores did not reach the stop memory")
}

// A loop that stores nothing, after a check of its function's entry, still
// sees the flag: the checks' loads are atomic, so a compiler may not reuse
// the entry's load for the loop's (to the single-threaded program a plain
// load would read the same value; today's Cranelift reloads it anyway, and
// this guards against one that does not).
func TestChecksReloadTheFlag(t *testing.T) {
	wasm := module(section(secType, vec(funcType(nil, nil))),
		section(secFunction, vec([]byte{0}, []byte{0})),
		section(secExport, vec(cat(name("spin"), []byte{0x00, 0x01}))),
		section(secCode, vec(body(nil, 0x0b), // nop
			body(nil, 0x10, 0x00, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b)))) // call nop; loop br 0 end
	store, inst, flag := checkedInstance(t, wasm)
	time.AfterFunc(50*time.Millisecond, func() { atomic.StoreUint32(flag, 1) })
	done := make(chan error, 1)
	go func() { _, err := inst.GetFunc(store, "spin").Call(store); done <- err }()
	select {
	case err := <-done:
		require.Error(t, err)
	case <-time.After(time.Minute): // a bound for a hang, not a timing
		t.Fatal("the loop never saw the flag")
	}
}
