import time
t = time.monotonic()
time.sleep(0.1)
took = time.monotonic() - t
print("slept", 0.09 < took < 1.0)
