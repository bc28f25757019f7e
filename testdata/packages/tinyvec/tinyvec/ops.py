def add(a, b):
    """Element-wise sum of two vectors of the same length."""
    if len(a) != len(b):
        raise ValueError("vectors of different lengths: %d and %d" % (len(a), len(b)))
    return [x + y for x, y in zip(a, b)]


def dot(a, b):
    return sum(x * y for x, y in zip(a, b, strict=True))
