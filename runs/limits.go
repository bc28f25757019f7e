package runs

import (
	"fmt"
	"math"
	"time"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/skills"
	"github.com/wasmpy/wasmpy/tiers"
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
// The error, a *skills.Error (bad_request), names the field, its range and
// source(field), where the bound comes from ("" for none said).
func (r RequestedLimits) limits(ceil wasmpy.Limits, source func(field string) string) (wasmpy.Limits, error) {
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
		return wasmpy.Limits{}, &skills.Error{Code: CodeBadRequest, Message: fmt.Sprintf(format, a...)}
	}
	switch {
	case r.TimeoutMS < 0 || r.TimeoutMS > maxMS:
		return bad("limits.timeout_ms: want 1 to %d%s (or 0 for the default), got %d", maxMS, source("timeout_ms"), r.TimeoutMS)
	case r.MemoryBytes > maxMemory:
		return bad("limits.memory_bytes: want 1 to %d%s (or 0 for the default), got %d", maxMemory, source("memory_bytes"), r.MemoryBytes)
	case r.Fuel > maxFuel:
		return bad("limits.fuel: want 1 to %d%s (or 0 for the default), got %d", maxFuel, source("fuel"), r.Fuel)
	}
	return wasmpy.Limits{Timeout: time.Duration(r.TimeoutMS) * time.Millisecond, Memory: r.MemoryBytes, Fuel: r.Fuel}, nil
}

// limitSource says where the bound of a request's field comes from: the
// tier t's limit, or an operator's ceiling (ceilings), whichever is lower;
// what wasmpy can count where none sets one.
func limitSource(field string, t *tiers.Tier, ceilings ...wasmpy.Limits) string {
	of := func(l wasmpy.Limits) uint64 {
		switch field {
		case "timeout_ms":
			return uint64(l.Timeout)
		case "memory_bytes":
			return l.Memory
		}
		return l.Fuel
	}
	unit := map[string]string{"timeout_ms": "timeout", "memory_bytes": "memory limit", "fuel": "fuel budget"}[field]
	tier, ceil := of(t.Limits), uint64(0)
	for _, c := range ceilings {
		if v := of(c); v != 0 && (ceil == 0 || v < ceil) {
			ceil = v
		}
	}
	switch {
	case ceil != 0 && (tier == 0 || ceil < tier):
		return fmt.Sprintf(": the server's %s ceiling", unit)
	case tier != 0:
		return fmt.Sprintf(": tier %s's %s", t.Name, unit)
	}
	return ": what wasmpy can count"
}
