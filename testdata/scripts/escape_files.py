# The sandbox has no host files: it sees its own workspace (empty here) and /tmp, both in memory.
import os
for path in ("/etc/passwd", "/proc/self/environ", "../../../../etc/hostname", os.path.expanduser("~/.bashrc")):
    try:
        with open(path) as f:
            print("READ", path, f.read(20))
    except OSError as e:
        print("refused", path, type(e).__name__)
for d in ("/", ".", "/tmp", "/etc"):
    try:
        print("list", d, sorted(os.listdir(d)))
    except OSError as e:
        print("refused list", d, type(e).__name__)
try:
    open("/tmp/wasmpy-escape", "w").write("x")  # the run's own /tmp, never the host's
    print("wrote its own /tmp", os.listdir("/tmp"))
except OSError as e:
    print("refused write", type(e).__name__)
