import os
print(sorted(k for k in os.environ if not k.startswith("PYTHON")))
print(os.environ.get("WASMPY_TEST_SECRET"))
print(os.getcwd())
