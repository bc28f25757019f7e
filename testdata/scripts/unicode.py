import sys
print("héllo wörld ✓ 🐍")
print("to stderr", file=sys.stderr)
