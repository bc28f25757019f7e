package engine

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/assets"
)

// A crafted interpreter (testdata/hostile.wat) calls every host function
// with counts that overflow and pointers out of range: each call fails with
// an error code, the host never panics, and no Go stack reaches the outcome.
func TestHostileInterpreter(t *testing.T) {
	wasm, err := os.ReadFile("testdata/hostile.wasm")
	require.NoError(t, err)
	for _, metered := range []bool{true, false} {
		t.Run(fmt.Sprintf("metered=%t", metered), func(t *testing.T) {
			interp := &assets.Interpreter{Kind: assets.NPM, Version: "hostile", Wasm: wasm, SHA256: fmt.Sprintf("%x", sha256.Sum256(wasm))}
			e, err := New(context.Background(), Config{Interpreter: interp, Unmetered: !metered})
			require.NoError(t, err)
			defer e.Close(context.Background())
			out, err := e.Run(context.Background(), &Run{Code: "pass", MemoryLimit: 3 << 30})
			require.NoError(t, err)
			require.NotNil(t, out.Failure)
			require.Equal(t, 42, out.ExitCode, "the call numbered by the exit status answered wrongly: %s", out.Failure.Message)
			require.Equal(t, KindExit, out.Failure.Kind)
			require.NotContains(t, out.Failure.Message, "goroutine")
		})
	}
}

// An interpreter without memory is refused at once: the host functions
// would have none to read.
func TestInterpreterWithoutMemory(t *testing.T) {
	// (module (func (export "_start")))
	wasm := []byte("\x00asm\x01\x00\x00\x00\x01\x04\x01\x60\x00\x00\x03\x02\x01\x00\x07\x0a\x01\x06_start\x00\x00\x0a\x04\x01\x02\x00\x0b")
	interp := &assets.Interpreter{Kind: assets.NPM, Version: "nomem", Wasm: wasm, SHA256: fmt.Sprintf("%x", sha256.Sum256(wasm))}
	_, err := New(context.Background(), Config{Interpreter: interp, Unmetered: true})
	require.ErrorContains(t, err, "exports no memory")
}

// An instance's unexpected error reaches the outcome as one line: wazero
// appends the wasm stack, and for a Go runtime error the Go stack too.
func TestFirstLine(t *testing.T) {
	err := fmt.Errorf("runtime error: index out of range [3] with length 2 (recovered by wazero)\nwasm stack trace:\n\tf()\n\nGo runtime stack trace:\ngoroutine 1 [running]:\n/home/x/y.go:12")
	require.Equal(t, "runtime error: index out of range [3] with length 2", firstLine(err))
}
