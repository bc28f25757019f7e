import time


def spin(seconds=None):
    start = time.monotonic()
    while seconds is None or time.monotonic() - start < seconds:
        pass
    return {"spun": seconds}
