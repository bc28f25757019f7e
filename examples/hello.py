"""The quick start's first script: prints, as python3 would."""
import sys

print("Hello from Python", sys.version.split()[0], "in the wasmpy sandbox")
