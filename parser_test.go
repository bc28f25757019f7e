package wasmpy_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
)

// The parser nests as deep as native CPython's
// (assets/build/patches/0004-parser-stack-native-depth.patch): 200
// parentheses, the tokenizer's limit, and past 6000 rule levels the same
// MemoryError as native, not a trap.
func TestParserDepth(t *testing.T) {
	res := run(t, wasmpy.Job{Code: `
for src in ("(" * 150 + "1" + ")" * 150, "(" * 200 + "1" + ")" * 200, "(" * 201 + "1" + ")" * 201,
            "[" * 200 + "]" * 200, "-" * 9000 + "1"):
    try:
        compile(src, "<deep>", "eval")
        print("ok")
    except (SyntaxError, MemoryError) as e:
        print(type(e).__name__, e.msg if isinstance(e, SyntaxError) else e)
`})
	require.Nil(t, res.Error, res.Stderr)
	if testSandbox(t).Interpreter().Kind != "core" && strings.HasPrefix(res.Stdout, "MemoryError") { // 150 levels
		t.Skip("the npm interpreter is built without assets/build/patches (upstream's WASI limit, 4000 levels)")
	}
	require.Equal(t, "ok\nok\nSyntaxError too many nested parentheses\nok\n"+
		"MemoryError Parser stack overflowed - Python source too complex to parse\n", res.Stdout)
}
