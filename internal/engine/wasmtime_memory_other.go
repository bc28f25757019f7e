//go:build wasmtime && cgo && !(linux || darwin)

package engine

import "github.com/bytecodealliance/wasmtime-go/v39"

// Elsewhere wasmtime makes the memories: the Store limiter enforces the
// limit (a refusal the host does not see) and each run copies the image.
const customMemory = false

func installMemory(*wasmtime.Config) {}

type memState struct{}

func withMemory(_ uint64, _ *image, instantiate func() error) (memState, error) {
	return memState{}, instantiate()
}

func (memState) mapped(*image) bool { return false }
func (memState) refused() bool      { return false }
func (memState) size() uint64       { return 0 } // unknown: the image's size is what is surely inside
func (memState) limit(uint64) bool  { return false }

// maxWasmStack keeps wasmtime's default elsewhere.
func maxWasmStack() int { return 512 << 10 }
