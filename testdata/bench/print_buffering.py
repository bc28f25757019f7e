"""What unbuffered stdout costs: 100,000 print(i) to sys.stdout (unbuffered
in wasmpy), to a block-buffered and to a line-buffered wrapper of fd 1.
Timings go to stderr:  wasmpy exec --output-limit 64MiB print_buffering.py >/dev/null"""
import io, sys, time
def bench(stream, n=100000):
    t = time.perf_counter()
    for i in range(n):
        print(i, file=stream)
    stream.flush()
    return time.perf_counter() - t
unbuf = sys.stdout
buf = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, 'w', closefd=False)), encoding='utf-8')
line = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, 'w', closefd=False)), encoding='utf-8', line_buffering=True)
for _ in range(3):
    print("unbuffered %.3f  block %.3f  line %.3f" % (bench(unbuf), bench(buf), bench(line)), file=sys.stderr)
