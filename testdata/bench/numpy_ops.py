# numpy micro-benchmarks: best time of each operation in milliseconds, as
# JSON on one line. BenchmarkNumpy runs it in the sci sandbox and with a
# native numpy, in the same run.
import json
import time

import numpy as np


def best(f, n):
    b = float("inf")
    for _ in range(n):
        t = time.perf_counter()
        f()
        b = min(b, time.perf_counter() - t)
    return round(b * 1e3, 3)


rng = np.random.default_rng(0)
a, b = rng.random(10**6), rng.random(10**6)
m, m2 = rng.random((200, 200)), rng.random((200, 200))
x = rng.random(2**16)
print(json.dumps({
    "sum": best(lambda: a.sum(), 10),
    "arange": best(lambda: np.arange(10**6), 10),
    "a*b+1": best(lambda: a * b + 1.0, 10),
    "sin": best(lambda: np.sin(a), 5),
    "exp": best(lambda: np.exp(a), 5),
    "sort": best(lambda: np.sort(a), 3),
    "matmul": best(lambda: m @ m2, 5),
    "inv": best(lambda: np.linalg.inv(m), 5),
    "fft": best(lambda: np.fft.fft(x), 10),
    "normal": best(lambda: rng.normal(size=10**6), 3),
}))
