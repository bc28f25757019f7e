package codegen_test

import (
	"fmt"

	"github.com/wasmpy/wasmpy/codegen"
)

func ExampleExtract() {
	reply := "Here you go:\n\n```python\nprint(sum(range(10)))\n```\n\nIt prints 45."
	fmt.Print(codegen.Extract(reply))
	// Output: print(sum(range(10)))
}
