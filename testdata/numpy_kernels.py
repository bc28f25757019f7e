# The sci build's wasm SIMD kernels (assets/build/numpy/, wasm_simd.h) give
# the bits numpy's scalar loops give: elementwise + - * / of float64 and
# float32 (contiguous, scalar on either side, in place, strided and
# overlapping layouts that must take the scalar loop), sum (numpy's pairwise
# order), matmul (each element summed from +0 in k order), arange's fill,
# checked against pure Python references for odd sizes, NaN, inf and -0;
# lapack_lite's vectorized BLAS through inv and solve. Prints "ok" and the
# number of checks, or the first mismatch.
import math
import operator
import struct

import numpy as np

np.seterr(all="ignore")

F64, F32 = np.float64, np.float32
OPS = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul, "divide": operator.truediv}
SIZES = [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 127, 128, 129, 130, 257, 1000, 1001]
checks = 0


def bits(x, dt):
    x = dt(x)
    return ("nan",) if math.isnan(x) else struct.pack("<d" if dt is F64 else "<f", x)


def same(got, want, dt, what):
    global checks
    got, want = np.asarray(got, dtype=dt).ravel().tolist(), list(want)
    assert len(got) == len(want), (what, len(got), len(want))
    for i, (g, w) in enumerate(zip(got, want)):
        assert bits(g, dt) == bits(w, dt), f"{what}: [{i}] {g!r} != {w!r}"
    checks += 1


def round_to(dt, x):
    # float32's + - * / of float32 values: the double result, rounded once.
    if dt is F64 or math.isnan(x) or math.isinf(x):
        return x
    return float(np.array([x]).astype(F32)[0])


def ref_op(op, dt, xs, ys):
    out = []
    for x, y in zip(xs, ys):
        try:
            r = OPS[op](x, y)
        except ZeroDivisionError:
            r = math.nan if x == 0 or math.isnan(x) else math.copysign(math.inf, x) * math.copysign(1, y)
        except OverflowError:
            r = math.inf
        out.append(round_to(dt, r))
    return out


def values(n, dt, seed):
    rng = np.random.default_rng(seed)
    v = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(dt)
    special = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1e-310 if dt is F64 else 1e-40]
    for i in range(0, n, 7):
        v[i] = special[(i // 7) % len(special)]
    return v


for dt in (F64, F32):
    for n in SIZES:
        a, b = values(2 * n + 1, dt, n), values(2 * n + 1, dt, n + 100)
        for op, uf in ((k, getattr(np, k)) for k in OPS):
            for name, x, y in [("contiguous", a[:n], b[:n]), ("strided", a[::2][:n], b[1::2][:n]),
                               ("reversed", a[:n][::-1], b[:n]), ("mixed", a[:n], b[::2][:n])]:
                same(uf(x, y), ref_op(op, dt, x.tolist(), y.tolist()), dt, f"{dt.__name__} {op} {name} n={n}")
            s = dt(b[1]) if n > 1 else dt(3.5)
            x = a[:n]
            same(uf(x, s), ref_op(op, dt, x.tolist(), [float(s)] * n), dt, f"{dt.__name__} {op} array-scalar n={n}")
            same(uf(s, x), ref_op(op, dt, [float(s)] * n, x.tolist()), dt, f"{dt.__name__} {op} scalar-array n={n}")
            # In place: the output is the first input.
            c = a[:n].copy()
            want = ref_op(op, dt, c.tolist(), b[:n].tolist())
            uf(c, b[:n], out=c)
            same(c, want, dt, f"{dt.__name__} {op} in place n={n}")
            # Overlapping by one element: numpy's answer is as if the inputs
            # were copied first.
            if n > 2:
                c = a[:n].copy()
                want = ref_op(op, dt, c[:-1].tolist(), b[: n - 1].tolist())
                uf(c[:-1], b[: n - 1], out=c[1:])
                same(c[1:], want, dt, f"{dt.__name__} {op} overlap n={n}")
        # a*b+1, the benchmark's expression.
        x, y = a[:n], b[:n]
        same(x * y + 1, ref_op("add", dt, ref_op("multiply", dt, x.tolist(), y.tolist()), [1.0] * n), dt,
             f"{dt.__name__} a*b+1 n={n}")


def pairwise(xs, dt):
    # numpy's pairwise_sum (loops_utils.h.src), in Python.
    n = len(xs)
    if n < 8:
        r = -0.0
        for x in xs:
            r = round_to(dt, r + x)
        return r
    if n <= 128:
        r = list(xs[:8])
        i = 8
        while i < n - n % 8:
            for k in range(8):
                r[k] = round_to(dt, r[k] + xs[i + k])
            i += 8
        p = [round_to(dt, r[k] + r[k + 1]) for k in (0, 2, 4, 6)]
        res = round_to(dt, round_to(dt, p[0] + p[1]) + round_to(dt, p[2] + p[3]))
        for x in xs[i:]:
            res = round_to(dt, res + x)
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return round_to(dt, pairwise(xs[:n2], dt) + pairwise(xs[n2:], dt))


def ref_sum(xs, dt):
    # add.reduce: from the identity +0, over chunks of numpy's buffer size.
    r = 0.0
    for i in range(0, len(xs), 8192):
        r = round_to(dt, r + pairwise(xs[i:i + 8192], dt))
    return r


for dt in (F64, F32):
    for n in SIZES + [4096, 10007, 20001]:
        rng = np.random.default_rng(n)
        a = (rng.random(2 * n) - 0.3).astype(dt)
        same([a[:n].sum()], [ref_sum(a[:n].tolist(), dt)], dt, f"{dt.__name__} sum n={n}")
        same([a[::2].sum()], [ref_sum(a[::2].tolist(), dt)], dt, f"{dt.__name__} strided sum n={n}")
        if n > 20:
            a[5], a[n - 3] = math.inf, -math.inf
            same([a[:n].sum()], [math.nan], dt, f"{dt.__name__} sum inf-inf n={n}")
            a[5], a[n - 3] = math.nan, 1.0
            same([a[:n].sum()], [math.nan], dt, f"{dt.__name__} sum nan n={n}")
    x = np.arange(300, dtype=dt).reshape(20, 15)
    same(x.sum(axis=0), [ref_sum(c, dt) for c in x.T.tolist()], dt, f"{dt.__name__} sum axis=0")
    same(x.sum(axis=1), [ref_sum(r, dt) for r in x.tolist()], dt, f"{dt.__name__} sum axis=1")


def ref_matmul(x, y, dt):
    m, k = x.shape
    p = y.shape[1]
    xs, ys = x.tolist(), y.tolist()
    out = []
    for i in range(m):
        for j in range(p):
            c = 0.0
            for t in range(k):
                c = round_to(dt, c + round_to(dt, xs[i][t] * ys[t][j]))
            out.append(c)
    return out


for dt in (F64, F32):
    rng = np.random.default_rng(5)
    for m, k, p in [(1, 1, 1), (2, 3, 2), (3, 5, 4), (5, 7, 9), (4, 8, 16), (7, 13, 33), (17, 9, 31), (1, 19, 37), (23, 1, 18)]:
        x = (rng.random((m, k)) - 0.5).astype(dt)
        y = (rng.random((k, p)) - 0.5).astype(dt)
        same(x @ y, ref_matmul(x, y, dt), dt, f"{dt.__name__} matmul {m}x{k}x{p}")
        # Transposed and strided inputs, a Fortran-ordered output, a stack.
        same(np.asfortranarray(x) @ y, ref_matmul(x, y, dt), dt, f"{dt.__name__} matmul F-order A {m}x{k}x{p}")
        same(x @ np.asfortranarray(y), ref_matmul(x, y, dt), dt, f"{dt.__name__} matmul F-order B {m}x{k}x{p}")
        yy = np.zeros((k, 2 * p), dtype=dt)
        yy[:, ::2] = y
        same(x @ yy[:, ::2], ref_matmul(x, y, dt), dt, f"{dt.__name__} matmul strided B {m}x{k}x{p}")
        o = np.zeros((p, m), dtype=dt).T
        np.matmul(x, y, out=o)
        same(o, ref_matmul(x, y, dt), dt, f"{dt.__name__} matmul F-order out {m}x{k}x{p}")
        st = np.stack([x, -x])
        same(st @ y, ref_matmul(x, y, dt) + ref_matmul(-x, y, dt), dt, f"{dt.__name__} matmul stacked {m}x{k}x{p}")
    x = np.array([[math.nan, 1.0], [math.inf, 0.0], [-0.0, -0.0]], dtype=dt)
    y = np.array([[1.0, -0.0, 2.0, 1.0, 0.0], [math.inf, 0.0, 1.0, -1.0, -0.0]], dtype=dt)
    same(x @ y, ref_matmul(x, y, dt), dt, f"{dt.__name__} matmul nan/inf/-0")
    # In place: numpy copies an output that overlaps an input.
    x = (rng.random((6, 6)) - 0.5).astype(dt)
    want = ref_matmul(x, x, dt)
    np.matmul(x, x, out=x)
    same(x, want, dt, f"{dt.__name__} matmul out=input")


# arange: buffer[0] = start, buffer[1] = start + step, then fill's
# start + i * delta with delta = buffer[1] - buffer[0], in the dtype.
for dt, start, step, n in [(np.int32, -7, 3, 1001), (np.int64, 5, -2, 999), (np.int16, 0, 1, 300), (np.uint8, 1, 1, 200),
                           (F64, 0.1, 0.3, 1003), (F64, -1e6, 1 / 3, 17), (F32, 0.1, 0.3, 1003), (F32, 2.5, -0.7, 33)]:
    got = np.arange(start, start + step * n, step, dtype=dt)[:n]
    if dt in (F64, F32):
        b0, b1 = round_to(dt, start), round_to(dt, start + step)
        d = round_to(dt, b1 - b0)
        want = [b0, b1] + [round_to(dt, b0 + round_to(dt, float(i) * d)) for i in range(2, len(got))]
        same(got, want, dt, f"{dt.__name__} arange {start} {step}")
    else:
        info = np.iinfo(dt)
        want = [((start + i * step - info.min) % (info.max - info.min + 1)) + info.min for i in range(len(got))]
        assert got.tolist() == want, f"{dt.__name__} arange {start} {step}"
        checks += 1

# inv and solve (lapack_lite's BLAS): A @ inv(A) is the identity, to
# rounding, for odd sizes, float64 and float32, C and Fortran order.
for dt, tol in ((F64, 1e-9), (F32, 2e-3)):
    for n in (1, 2, 3, 7, 16, 33, 65, 130):
        rng = np.random.default_rng(n)
        x = (rng.random((n, n)) + n * np.eye(n)).astype(dt)
        for a in (x, np.asfortranarray(x), x.T):
            r = np.abs(a @ np.linalg.inv(a) - np.eye(n)).max()
            assert r < tol, f"{dt.__name__} inv n={n}: residual {r}"
            y = (rng.random((n, 3)) - 0.5).astype(dt)
            r = np.abs(a @ np.linalg.solve(a, y) - y).max()
            assert r < tol, f"{dt.__name__} solve n={n}: residual {r}"
            checks += 2

print("ok", checks)
