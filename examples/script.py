"""The quick start's script: what a run gets, and what it gives back.

It prints its arguments and the workspace's files, writes a report into the
workspace (--out DIR saves it), and hands a value to submit_result (shown
after the run, or as "output" with --json). Under --grant none it is told
that submit_result is not granted, and says so.
"""
import os
import sys

files = sorted(os.listdir("."))
print("args:", sys.argv[1:])
print("workspace:", files)
with open("report.txt", "w") as f:
    f.write("%d files: %s\n" % (len(files), ", ".join(files)))
try:
    submit_result({"args": sys.argv[1:], "files": files})
except PermissionError as e:
    print("no submit_result here:", e)
