try:
    b = bytearray(1 << 30)
    print("ALLOCATED")
except MemoryError:
    print("caught MemoryError")
