package skills

import (
	"fmt"
	"math"
	"time"

	"github.com/wasmpy/wasmpy"
)

// RequestedLimits are the limits a raw-code request (POST /exec, MCP
// run_python) asks for; 0 means the default. Executor.ExecLimits bounds
// them.
type RequestedLimits struct {
	TimeoutMS   int64  `json:"timeout_ms,omitempty"`
	MemoryBytes uint64 `json:"memory_bytes,omitempty"`
	Fuel        uint64 `json:"fuel,omitempty"`
}

// limits are r as wasmpy.Limits, checked against ceil (or wasmpy's own
// bounds where ceil sets none): a request may ask for less, never more.
// The error, an *Error (bad_request), names the field and its range.
func (r RequestedLimits) limits(ceil wasmpy.Limits) (wasmpy.Limits, error) {
	maxMS := int64(math.MaxInt64 / int64(time.Millisecond))
	if ceil.Timeout != 0 {
		maxMS = max(1, ceil.Timeout.Milliseconds())
	}
	maxMemory, maxFuel := uint64(wasmpy.MaxMemory), uint64(wasmpy.MaxFuel)
	if ceil.Memory != 0 {
		maxMemory = ceil.Memory
	}
	if ceil.Fuel != 0 {
		maxFuel = ceil.Fuel
	}
	bad := func(format string, a ...any) (wasmpy.Limits, error) {
		return wasmpy.Limits{}, &Error{Code: CodeBadRequest, Message: fmt.Sprintf(format, a...)}
	}
	switch {
	case r.TimeoutMS < 0 || r.TimeoutMS > maxMS:
		return bad("limits.timeout_ms: want 1 to %d (or 0 for the default), got %d", maxMS, r.TimeoutMS)
	case r.MemoryBytes > maxMemory:
		return bad("limits.memory_bytes: want 1 to %d (or 0 for the default), got %d", maxMemory, r.MemoryBytes)
	case r.Fuel > maxFuel:
		return bad("limits.fuel: want 1 to %d (or 0 for the default), got %d", maxFuel, r.Fuel)
	}
	return wasmpy.Limits{Timeout: time.Duration(r.TimeoutMS) * time.Millisecond, Memory: r.MemoryBytes, Fuel: r.Fuel}, nil
}
