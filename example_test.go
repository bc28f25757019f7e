package wasmpy_test

import (
	"context"
	"fmt"
	"log"

	"github.com/wasmpy/wasmpy"
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
