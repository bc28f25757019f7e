package wasmpy_test

import (
	"context"
	"fmt"
	"log"
	"testing/fstest"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/hostfuncs"
)

// A Sandbox is made once and runs many jobs, each in a fresh instance.
func Example() {
	ctx := context.Background()
	sb, err := wasmpy.New(ctx, wasmpy.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close(ctx)

	res, err := sb.Run(ctx, wasmpy.Job{Code: "import sys\nprint(6 * 7, sys.argv[1:])", Args: []string{"x"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(res.Stdout)

	res, _ = sb.Run(ctx, wasmpy.Job{Code: "1 / 0"})
	fmt.Println(res.Error.Kind, res.Error.Type)
	// Output:
	// 42 ['x']
	// exception ZeroDivisionError
}

// A run may call only what it is granted. One Sandbox serves jobs with
// different grants; a built-in not granted raises PermissionError.
func ExampleJob_grants() {
	ctx := context.Background()
	sb, err := wasmpy.New(ctx, wasmpy.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close(ctx)

	code := `
write_file("note.txt", "hello")
submit_result(read_file("note.txt"))
`
	res, err := sb.Run(ctx, wasmpy.Job{Code: code, Grants: []wasmpy.Capability{wasmpy.ReadFile, wasmpy.WriteFile, wasmpy.SubmitResult}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(res.Output), res.Files[0].Path)

	res, _ = sb.Run(ctx, wasmpy.Job{Code: code}) // no grants
	fmt.Println(res.Err())
	// Output:
	// "hello" note.txt
	// wasmpy: exception: PermissionError: capability "write_file" is not granted to this run
}

// An embedder offers its own capability: a Go function the guest calls like
// any Python function, with keyword arguments, in the runs granted it.
func ExampleConfig_hostFuncs() {
	type priceArgs struct {
		SKU string `json:"sku"`
	}
	prices := map[string]float64{"apple": 0.5, "pear": 0.75}
	ctx := context.Background()
	sb, err := wasmpy.New(ctx, wasmpy.Config{
		HostFuncs: hostfuncs.Table{"price": hostfuncs.Typed(func(ctx context.Context, a priceArgs) (float64, error) {
			p, ok := prices[a.SKU]
			if !ok {
				return 0, hostfuncs.Errorf(hostfuncs.ValueError, "unknown sku %q", a.SKU)
			}
			return p, nil
		})},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close(ctx)

	res, err := sb.Run(ctx, wasmpy.Job{Grants: []wasmpy.Capability{"price", wasmpy.SubmitResult}, Code: `
total = price(sku="apple") * 4 + price(sku="pear")
try:
    price(sku="durian")
except ValueError as e:
    print(e)
submit_result({"total": total})
`})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(res.Stdout)
	fmt.Println(string(res.Output), res.HostCalls[0].Name, len(res.HostCalls))
	// Output:
	// unknown sku "durian"
	// {"total":2.75} price 4
}

// A program of several files runs from Job.App, mounted read-only at
// /app and first on sys.path, as python3 runs a directory. A program on
// disk (a directory or a zipapp) comes from wasmpy.OpenApp.
func ExampleJob_app() {
	ctx := context.Background()
	sb, err := wasmpy.New(ctx, wasmpy.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close(ctx)

	app := fstest.MapFS{
		"__main__.py":        {Data: []byte("import sys\nfrom shapes import area\nprint(area(3), sys.argv)\n")},
		"shapes/__init__.py": {Data: []byte("from .square import area\n")},
		"shapes/square.py":   {Data: []byte("def area(side):\n    return side * side\n")},
	}
	res, err := sb.Run(ctx, wasmpy.Job{App: app, Args: []string{"x"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(res.Stdout)
	// Output:
	// 9 ['/app', 'x']
}
