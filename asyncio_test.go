package wasmpy_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
)

// asyncio runs on CPython's own event loop (see
// assets/build/patches/0005-asyncio-wasi.patch): each feature, then how a
// waiting run ends.
func TestAsyncio(t *testing.T) {
	for _, tc := range []struct{ name, code, stdout string }{
		{"sleep and timers", `
import asyncio, time
async def main():
    loop = asyncio.get_running_loop()
    fired = []
    loop.call_later(0.02, fired.append, "later")
    loop.call_at(loop.time() + 0.01, fired.append, "at")
    loop.call_soon(fired.append, "soon")
    t0, w0 = loop.time(), time.monotonic()
    await asyncio.sleep(0.05)
    print(fired, 0.05 <= loop.time() - t0 < 1, 0.05 <= time.monotonic() - w0 < 1)
    return "done"
print(asyncio.run(main()))
`, "['soon', 'at', 'later'] True True\ndone\n"},
		{"futures, tasks, gather", `
import asyncio
async def square(x, delay):
    await asyncio.sleep(delay)
    return x * x
async def fail():
    await asyncio.sleep(0)
    raise ValueError("boom")
async def main():
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    loop.call_later(0.01, fut.set_result, 42)
    print(await fut)
    task = asyncio.create_task(square(3, 0.02))
    print(await asyncio.gather(square(1, 0.03), square(2, 0.01), task))
    print(await asyncio.gather(fail(), square(4, 0), return_exceptions=True))
    slow = asyncio.create_task(asyncio.sleep(10))
    await asyncio.sleep(0)
    slow.cancel()
    try:
        await slow
    except asyncio.CancelledError:
        print("cancelled", slow.cancelled())
    async with asyncio.TaskGroup() as tg:
        a = tg.create_task(square(5, 0.01))
        b = tg.create_task(square(6, 0))
    print(a.result(), b.result())
asyncio.run(main())
`, "42\n[1, 4, 9]\n[ValueError('boom'), 16]\ncancelled True\n25 36\n"},
		{"wait_for and timeout", `
import asyncio
async def main():
    try:
        await asyncio.wait_for(asyncio.sleep(10), timeout=0.02)
    except TimeoutError:
        print("wait_for timed out")
    print(await asyncio.wait_for(asyncio.sleep(0.01, result="in time"), timeout=5))
    try:
        async with asyncio.timeout(0.02):
            await asyncio.sleep(10)
    except TimeoutError:
        print("timeout() expired")
    done, pending = await asyncio.wait([asyncio.create_task(asyncio.sleep(0.01)),
                                        asyncio.create_task(asyncio.sleep(10))], timeout=0.05)
    print(len(done), len(pending))
    for t in pending:
        t.cancel()
asyncio.run(main())
`, "wait_for timed out\nin time\ntimeout() expired\n1 1\n"},
		{"async generators", `
import asyncio
closed = []
async def ticker(n):
    try:
        for i in range(n):
            await asyncio.sleep(0.001)
            yield i
    finally:
        closed.append(n)
async def main():
    print([i async for i in ticker(4)])
    gen = ticker(100)
    async for i in gen:
        if i == 2:
            break
    await gen.aclose()
    abandoned = ticker(50)
    print(await anext(abandoned))
    return list(closed)
print(asyncio.run(main()), closed)  # the loop finalised the abandoned one
`, "[0, 1, 2, 3]\n0\n[4, 100] [4, 100, 50]\n"},
		{"queues and synchronisation", `
import asyncio
async def producer(q, n):
    for i in range(n):
        await q.put(i)
        await asyncio.sleep(0.001)
async def consumer(q, out, lock):
    while True:
        item = await q.get()
        async with lock:
            out.append(item)
        q.task_done()
async def main():
    q, out, lock = asyncio.Queue(maxsize=2), [], asyncio.Lock()
    workers = [asyncio.create_task(consumer(q, out, lock)) for _ in range(3)]
    await asyncio.gather(producer(q, 10), producer(q, 10))
    await q.join()
    for w in workers:
        w.cancel()
    print(sorted(out) == sorted(list(range(10)) * 2))
    pq = asyncio.PriorityQueue()
    for x in (3, 1, 2):
        pq.put_nowait(x)
    print([pq.get_nowait() for _ in range(3)])
    ev, sem = asyncio.Event(), asyncio.Semaphore(2)
    asyncio.get_running_loop().call_later(0.01, ev.set)
    await ev.wait()
    async with sem:
        print("event set", sem.locked())
asyncio.run(main())
`, "True\n[1, 2, 3]\nevent set False\n"},
		{"loops made directly", `
import asyncio
async def f():
    await asyncio.sleep(0.001)
    return asyncio.get_running_loop().__class__.__name__
for make in (asyncio.new_event_loop, asyncio.EventLoop, asyncio.SelectorEventLoop):
    loop = make()
    print(loop.run_until_complete(f()))
    loop.close()
with asyncio.Runner() as runner:
    print(runner.run(f()))
`, "_UnixSelectorEventLoop\n_UnixSelectorEventLoop\n_UnixSelectorEventLoop\n_UnixSelectorEventLoop\n"},
		{"what WASI lacks is refused", `
import asyncio, signal
async def main():
    try:
        await asyncio.open_connection("127.0.0.1", 80)
    except OSError:
        print("socket: refused")
    try:
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, print)
    except NotImplementedError as e:
        print("signal:", e)
    await asyncio.Event().wait()  # nothing can ever set it
try:
    asyncio.run(main())
except RuntimeError as e:
    print("run:", e)
`, "socket: refused\nsignal: signal handlers are not supported on WASI\n" +
			"run: event loop deadlock: every task is waiting, and no timer or I/O can wake one\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, wasmpy.Job{Code: tc.code})
			require.Nil(t, res.Error, res.Stderr)
			require.Equal(t, tc.stdout, res.Stdout)
		})
	}
}

// A run waiting in the event loop is stopped by its deadline, on time.
func TestAsyncioDeadline(t *testing.T) {
	start := time.Now()
	res := run(t, wasmpy.Job{Code: `
import asyncio
async def main():
    print("waiting", flush=True)
    await asyncio.gather(asyncio.sleep(60), asyncio.wait_for(asyncio.sleep(120), 90))
asyncio.run(main())
`, Limits: wasmpy.Limits{Timeout: 500 * time.Millisecond}})
	elapsed := time.Since(start)
	require.NotNil(t, res.Error, res.Stdout)
	require.Equal(t, wasmpy.KindTimeout, res.Error.Kind)
	require.Equal(t, "waiting\n", res.Stdout)
	require.Less(t, elapsed, 3*time.Second)
}

// Under a fuel budget the guest's clock is fake and advances by what it
// sleeps, so an asyncio workload spends the same fuel every time, and one
// that spins in the loop runs out of it.
func TestAsyncioFuel(t *testing.T) {
	const workload = `
import asyncio
async def worker(q, i):
    total = 0
    while (x := await q.get()) is not None:
        await asyncio.sleep(0.001 * (x % 3))
        total += x * i
    return total
async def main():
    q = asyncio.Queue()
    for x in range(300):
        q.put_nowait(x)
    for _ in range(4):
        q.put_nowait(None)
    print(sum(await asyncio.gather(*(worker(q, i) for i in range(4)))) > 0)
asyncio.run(main())
`
	var used []uint64
	for range 3 {
		res := run(t, wasmpy.Job{Code: workload, Limits: wasmpy.Limits{Fuel: 2_000_000_000}})
		require.Nil(t, res.Error, res.Stderr)
		require.Equal(t, "True\n", res.Stdout)
		used = append(used, res.FuelUsed)
	}
	require.Equal(t, used[0], used[1])
	require.Equal(t, used[0], used[2])

	res := run(t, wasmpy.Job{Code: `
import asyncio
async def spin():
    while True:
        await asyncio.sleep(0)
asyncio.run(spin())
`, Limits: wasmpy.Limits{Fuel: 300_000_000}})
	require.NotNil(t, res.Error)
	require.Equal(t, wasmpy.KindFuel, res.Error.Kind)
}
