# pandas micro-benchmarks: best time of each operation in milliseconds, as
# JSON on one line. BenchmarkPandas runs it in the sci sandbox and with a
# native pandas, in the same run.
import io
import json
import time

import numpy as np
import pandas as pd


def best(f, n):
    b = float("inf")
    for _ in range(n):
        t = time.perf_counter()
        f()
        b = min(b, time.perf_counter() - t)
    return round(b * 1e3, 3)


rng = np.random.default_rng(0)
n = 100_000
df = pd.DataFrame({"key": rng.integers(0, 1000, n), "cat": rng.choice(["a", "b", "c", "d"], n),
                   "x": rng.random(n), "y": rng.normal(size=n)})
text = df.to_csv(index=False)
right = pd.DataFrame({"key": np.arange(1000), "w": rng.random(1000)})
print(json.dumps({
    "read_csv": best(lambda: pd.read_csv(io.StringIO(text)), 3),
    "groupby-sum": best(lambda: df.groupby("key").x.sum(), 5),
    "groupby-agg": best(lambda: df.groupby(["cat", "key"]).agg({"x": "sum", "y": "mean"}), 3),
    "merge": best(lambda: df.merge(right, on="key"), 3),
    "sort": best(lambda: df.sort_values(["cat", "x"]), 3),
    "to_csv": best(lambda: df.to_csv(index=False), 2),
}))
