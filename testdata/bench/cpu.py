# A pystone-like mix: objects, dicts, sorting, recursion, strings.
class Point:
    __slots__ = ("x", "y")

    def __init__(self, x, y):
        self.x, self.y = x, y

    def moved(self, dx, dy):
        return Point(self.x + dx, self.y + dy)


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def work():
    p = Point(0, 0)
    for i in range(60000):
        p = p.moved(i % 7, -(i % 5))
    counts = {}
    for i in range(60000):
        k = "k%d" % (i % 997)
        counts[k] = counts.get(k, 0) + i
    data = sorted(range(60000), key=lambda v: (v * 7919) % 60013)
    words = " ".join("w%d" % (i % 113) for i in range(20000)).split()
    text = "-".join(sorted(set(words)))
    return p.x, p.y, len(counts), data[:3], fib(22), len(text)


print(work())
