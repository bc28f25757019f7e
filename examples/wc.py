"""Counts the lines, words and characters of stdin, as wc does."""
import sys

text = sys.stdin.read()
print(len(text.splitlines()), len(text.split()), len(text))
