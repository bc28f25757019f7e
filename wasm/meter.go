package wasm

import (
	"github.com/tetratelabs/wazero/api"

	"github.com/wasmpy/wasmpy/internal/fuel"
)

// meter sets a run's fuel budget in the instrumented interpreter's counter
// and reads back what was spent. A nil meter (an unmetered engine) measures
// nothing. The guest has no way to reach the counter: it is a wasm global,
// invisible to the code it runs, and only ever decremented.
type meter struct {
	budget  int64
	counter api.MutableGlobal
	left    int64
}

func (m *meter) start(mod api.Module) {
	if m == nil {
		return
	}
	m.counter, _ = mod.ExportedGlobal(fuel.GlobalName).(api.MutableGlobal)
	if m.counter != nil {
		m.counter.Set(uint64(m.budget))
	}
	m.left = m.budget
}

// stop reads the counter; call it before the instance is closed.
func (m *meter) stop() {
	if m != nil && m.counter != nil {
		m.left = int64(m.counter.Get())
	}
}

// used is the fuel spent: the whole budget when it ran out.
func (m *meter) used() uint64 {
	if m == nil {
		return 0
	}
	return uint64(m.budget - max(m.left, 0))
}

func (m *meter) exhausted() bool { return m != nil && m.left < 0 }
