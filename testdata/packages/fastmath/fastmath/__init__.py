from ._speed import fast_sum  # native: the sandbox cannot load it
