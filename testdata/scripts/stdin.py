import sys
data = sys.stdin.read()
print(len(data), data.upper())
