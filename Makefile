# make       builds bin/wasmpy and installs the interpreters (our CPython 3.13
#            build when the machine can build it, the npm one always)
# make test  runs every test against the real interpreter
# make packages  fetches the Debian packages of assets/build/packages.lock
#            (sympy, networkx, dateutil...) that the package-set tests build into a set
# make test-cpython  runs CPython's regression tests in the sandbox beside a
#            native run of the same source (make test runs a fast subset)
GO ?= go
BUILD_DIR = $(shell bin/wasmpy setup --build-dir)
# The fuel instrumenter's test also meters the npm build, a WASI command.
export WASMPY_TEST_WASM = $(dir $(BUILD_DIR))npm-3.12.0/python.wasm
export WASMPY_DEBS ?= $(abspath $(dir $(BUILD_DIR))../debs)

.PHONY: all wasmpy interpreter packages test test-cpython bench fuzz clean
all: wasmpy interpreter

wasmpy:
	$(GO) build -o bin/wasmpy ./cmd/wasmpy

# build.sh exits 3 when this host cannot build (no root, no apt): then the npm
# interpreter, which `wasmpy setup` always installs, is what runs.
interpreter: wasmpy
	@assets/build/build.sh "$(BUILD_DIR)" || { rc=$$?; \
	  if [ $$rc -eq 3 ]; then echo "make: cannot build the wasmpy interpreter here; using the npm interpreter"; \
	  else exit $$rc; fi; }
	bin/wasmpy setup

# debpkgs.sh exits 3 when this host cannot fetch them: their tests skip.
packages:
	@assets/build/debpkgs.sh "$(WASMPY_DEBS)" || { rc=$$?; \
	  if [ $$rc -eq 3 ]; then echo "make: cannot fetch the Debian packages here; the tests that need them skip"; \
	  else exit $$rc; fi; }

test: all packages
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "make: gofmt -w these files: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) test -count=1 ./...
	$(GO) test -count=1 -run '^$$' -bench . -benchtime 1x ./...

test-cpython: all
	WASMPY_CPYTHON=all $(GO) test -count=1 -v -timeout 6h -run '^TestCPython$$' ./internal/cpythontest

bench: all packages
	$(GO) test -run '^$$' -bench . -benchtime 3s -count 1 ./...

clean:
	rm -rf bin
