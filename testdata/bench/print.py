for i in range(1_000_000):
    print(i)
