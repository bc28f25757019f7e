package fuel_test

import (
	"context"
	"fmt"
	"os"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/wasmpy/wasmpy/internal/fuel"
)

// Instrument a module, give it a budget, and see what a call used and what
// running out looks like.
func Example() {
	ctx := context.Background()
	original, err := os.ReadFile("testdata/cost.wasm")
	if err != nil {
		panic(err)
	}
	wasm, err := fuel.Instrument(original, nil)
	if err != nil {
		panic(err)
	}

	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	mod, err := rt.Instantiate(ctx, wasm)
	if err != nil {
		panic(err)
	}
	counter := mod.ExportedGlobal(fuel.GlobalName).(api.MutableGlobal)

	// count(n) loops n times; each iteration is 7 instructions.
	counter.Set(1000)
	res, err := mod.ExportedFunction("count").Call(ctx, 100)
	fmt.Println(res, err, "used:", 1000-int64(counter.Get()))

	_, err = mod.ExportedFunction("count").Call(ctx, 1000)
	fmt.Println(err != nil, "left:", int64(counter.Get()))
	// Output:
	// [100] <nil> used: 700
	// true left: -1
}
