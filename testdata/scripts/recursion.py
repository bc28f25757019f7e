def down(n):
    return down(n + 1)

down(0)
