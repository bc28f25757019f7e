package engine

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// asyncio is preloaded but out of sys.modules until the code imports it, as
// in python3: logging looks there for it, and when it found it, every
// record raised and caught a RuntimeError (asyncio.current_task() outside a
// loop). The import then gives back the preloaded package, whole.
func TestPreloadedAsyncioHiddenUntilImported(t *testing.T) {
	e := testEngine(t, true)
	out := runOn(t, e, &Run{Code: `
import sys, logging
raised = []
sys.monitoring.use_tool_id(3, "test")
sys.monitoring.register_callback(3, sys.monitoring.events.RAISE, lambda code, off, exc: raised.append(type(exc).__name__))
sys.monitoring.set_events(3, sys.monitoring.events.RAISE)
logging.LogRecord("x", logging.WARNING, "f.py", 1, "message", None, None)
sys.monitoring.set_events(3, 0)
print('asyncio' in sys.modules, raised)
import asyncio.events
print(sorted(n for n in sys.modules if n.startswith('asyncio.'))[:2], asyncio.events is sys.modules['asyncio.events'])
print(asyncio.__spec__.origin.endswith('asyncio/__init__.py'), asyncio.__loader__ is asyncio.__spec__.loader)
async def main():
    await asyncio.sleep(0)
    return asyncio.current_task().get_name()
print(asyncio.run(main()))
print([type(f).__name__ for f in sys.meta_path if type(f).__name__ == '_Hidden'])
`})
	require.Nil(t, out.Failure, "%s", out.Stderr)
	require.Equal(t, "False []\n['asyncio.base_events', 'asyncio.base_futures'] True\nTrue True\nTask-1\n[]\n", string(out.Stdout))

	// Still preloaded: the import costs a run next to nothing (33M units
	// when it is not).
	fuel := func(code string) uint64 { return runOn(t, e, &Run{Code: code}).FuelUsed }
	require.Less(t, fuel("import asyncio")-fuel("pass"), uint64(1_000_000))
}
