package skills

import (
	"fmt"
	"math"
	"time"

	"github.com/wasmpy/wasmpy"
)

// RequestedLimits are the limits a raw-code request (POST /exec, MCP
// run_python) asks for; 0 means the default.
type RequestedLimits struct {
	TimeoutMS   int64  `json:"timeout_ms,omitempty"`
	MemoryBytes uint64 `json:"memory_bytes,omitempty"`
	Fuel        uint64 `json:"fuel,omitempty"`
}

// Within returns ceil with what r asks for within it (or within wasmpy's
// own bounds where ceil sets none): a request may ask for less, never for
// more. The error, an *Error (bad_request), names the field and its range.
func (r RequestedLimits) Within(ceil wasmpy.Limits) (wasmpy.Limits, error) {
	lim := ceil
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
		return lim, &Error{Code: CodeBadRequest, Message: fmt.Sprintf(format, a...)}
	}
	if ms := r.TimeoutMS; ms != 0 {
		if ms < 0 || ms > maxMS {
			return bad("limits.timeout_ms: want 1 to %d (or 0 for the default), got %d", maxMS, ms)
		}
		lim.Timeout = time.Duration(ms) * time.Millisecond
	}
	if m := r.MemoryBytes; m != 0 {
		if m > maxMemory {
			return bad("limits.memory_bytes: want 1 to %d (or 0 for the default), got %d", maxMemory, m)
		}
		lim.Memory = m
	}
	if f := r.Fuel; f != 0 {
		if f > maxFuel {
			return bad("limits.fuel: want 1 to %d (or 0 for the default), got %d", maxFuel, f)
		}
		lim.Fuel = f
	}
	return lim, nil
}
