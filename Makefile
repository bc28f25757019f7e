# (Without building: bin/wasmpy setup installs verified release archives.)
# make       builds bin/wasmpy and the interpreters from source (our CPython 3.13
#            build and its sci variant with numpy and pandas when the machine can build
#            them, the npm one always); numpy's source tarball comes from
#            WASMPY_SOURCES (default ../shared/sources beside the checkout, the
#            main one for a git worktree, the origin for a local clone)
# make test  runs every test against the real interpreter on wazero, then a
#            30s soak and the cluster test (about a minute); where cgo works
#            (bin/wasmpy then has wasmtime, the CLI's default), the engine
#            tests on both engines (and the fuel package's stop checks), the CLI's and the
#            root tests on wasmtime,
#            the service's session tests (runs, service) on it, and the soak again on it
# make release  packs the built interpreters into dist/, one reproducible
#            archive per variant, checked against interpreter.lock (what
#            `wasmpy setup --from dist` or a release URL installs)
# make cross  builds every package for darwin/arm64, linux/arm64 and
#            windows/amd64 and vets each (make test runs it)
# make packages  fetches the Debian packages of assets/build/packages.lock
#            (sympy, networkx, dateutil...) that the package-set tests build into a set
# make test-numpy  runs numpy's own test suite in the sandbox (sci interpreter,
#            pytest from Debian packages), each test file a run of its own, and
#            prints pass/fail counts; it fails on a failure not listed in
#            internal/numpytest/expected_failures.txt, or a listed one that did
#            not fail; WASMPY_NUMPY_TESTS=DIR,FILE,... a part
# make test-pandas  runs pandas' own test suite in the sandbox the same way
#            (every file under pandas/tests, no slow, network or database
#            tests, as pandas.test() does; pandas' tarball from the build's
#            work dir), judged against internal/numpytest/
#            expected_failures_pandas.txt; hours: WASMPY_PANDAS_TESTS=DIR,FILE,...
#            a part (a directory with its subdirectories). make test runs
#            only the pandas smoke tests (pandas_test.go)
# make test-cpython  runs CPython's regression tests in the sandbox beside a
#            native run of the same source (make test runs a fast subset)
# make fuzz  runs every fuzz target (or those matching FUZZ) for FUZZTIME each
#            (FUZZFLAGS=-parallel=1 to spare cores)
# make setup  installs the Debian packages the tests run against (postgresql,
#            haproxy: deploy/setup.sh), as root; make test runs it
# make cluster-test  PostgreSQL + three replicas behind haproxy on loopback,
#            under load, one replica killed and restarted, the store checked
# make soak  drives bin/wasmpy serve with mixed load for DURATION (default 30s),
#            on the CLI's default engine (WASMPY_ENGINE=wazero|wasmtime to choose)
# make test-python  tests the Python client (python/) with the machine's python3
#            against bin/wasmpy: the CLI, a real `wasmpy serve`, a fake LLM
# make test-mcp-ts  drives bin/wasmpy mcp with the official TypeScript MCP SDK
#            (installed by npm ci from its committed lock file)
GO ?= go
# The wasmtime engine (cgo; its Go module ships the static library for linux
# and macOS on amd64 and arm64) is built in where cgo works there; WASMTIME=0
# leaves it out. wazero stays the default engine either way.
WASMTIME_PLATFORM := $(filter linux/amd64 linux/arm64 darwin/amd64 darwin/arm64,$(shell $(GO) env GOOS)/$(shell $(GO) env GOARCH))
WASMTIME ?= $(if $(and $(filter 1,$(shell $(GO) env CGO_ENABLED)),$(shell command -v "$$($(GO) env CC)"),$(WASMTIME_PLATFORM)),1,0)
ENGINE_TAGS = $(if $(filter 1,$(WASMTIME)),-tags wasmtime)
# Asked of bin/wasmpy once it exists (the exported variables below are
# evaluated for every recipe, the one that builds it included).
BUILD_DIR = $(shell [ -x bin/wasmpy ] && bin/wasmpy setup --build-dir)
SCI_DIR = $(shell [ -x bin/wasmpy ] && bin/wasmpy setup --sci-dir)
# The fuel instrumenter's test also meters the npm build, a WASI command.
export WASMPY_TEST_WASM = $(dir $(BUILD_DIR))npm-3.12.0/python.wasm
export WASMPY_DEBS ?= $(abspath $(dir $(BUILD_DIR))../debs)

.PHONY: all wasmpy interpreter release cross packages setup cluster-test test test-python test-cpython test-numpy test-pandas test-mcp-ts bench fuzz soak clean
all: wasmpy interpreter

wasmpy:
	$(GO) build $(ENGINE_TAGS) -o bin/wasmpy ./cmd/wasmpy

# build.sh exits 3 when this host cannot build (no root, no apt): then the npm
# interpreter, which `wasmpy setup` always installs, is what runs.
interpreter: wasmpy
	@assets/build/build.sh "$(BUILD_DIR)" || { rc=$$?; \
	  if [ $$rc -eq 3 ]; then echo "make: cannot build the wasmpy interpreter here; using the npm interpreter"; \
	  else exit $$rc; fi; }
	@assets/build/build.sh --variant sci "$(SCI_DIR)" || { rc=$$?; \
	  if [ $$rc -eq 3 ]; then echo "make: cannot build the sci interpreter here; the numpy tests skip"; \
	  else exit $$rc; fi; }
	bin/wasmpy setup --no-download

# The archives hold exactly what the lock pins: a build that differs is refused.
release: interpreter
	$(GO) run ./assets/mkrelease -o dist

# The default engine (wazero) is pure Go: every package builds for each
# platform, and vet checks each, tests included, except on Windows the
# CLI's tests (fifos, signals, process groups, ptys: a Unix CLI's harness).
CROSS_TARGETS = darwin/arm64 linux/arm64 windows/amd64
cross:
	@for t in $(CROSS_TARGETS); do \
	  os=$${t%/*}; arch=$${t#*/}; \
	  pkgs=$$(GOOS=$$os GOARCH=$$arch $(GO) list ./... | grep -v "$$([ $$os = windows ] && echo /cmd/wasmpy$$ || echo '^$$')"); \
	  echo "make cross: GOOS=$$os GOARCH=$$arch go build ./... && go vet ($$(echo $$pkgs | wc -w) packages)"; \
	  GOOS=$$os GOARCH=$$arch $(GO) build ./... || exit 1; \
	  GOOS=$$os GOARCH=$$arch $(GO) vet $$pkgs || exit 1; \
	done

# debpkgs.sh exits 3 when this host cannot fetch them: their tests skip.
packages:
	@assets/build/debpkgs.sh "$(WASMPY_DEBS)" || { rc=$$?; \
	  if [ $$rc -eq 3 ]; then echo "make: cannot fetch the Debian packages here; the tests that need them skip"; \
	  else exit $$rc; fi; }

# setup.sh exits 3 when it cannot install (no root, no apt): the tests that
# need the packages then fail, naming them.
setup:
	@deploy/setup.sh || { rc=$$?; [ $$rc -eq 3 ] || exit $$rc; }

test: all packages setup
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "make: gofmt -w these files: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(MAKE) --no-print-directory cross
	WASMPY_STRICT=1 $(GO) test -count=1 -race -timeout 40m ./...
	$(GO) test -count=1 -run '^$$' -bench . -benchtime 1x ./...
ifeq ($(WASMTIME),1)
	$(GO) vet -tags wasmtime ./internal/engine ./internal/fuel ./cmd/wasmpy .
	WASMPY_STRICT=1 $(GO) test -count=1 -race -timeout 40m -tags wasmtime ./internal/engine ./cmd/wasmpy
	WASMPY_STRICT=1 $(GO) test -count=1 -race -tags wasmtime -run Checks ./internal/fuel
	WASMPY_STRICT=1 WASMPY_ENGINE=wasmtime $(GO) test -count=1 -race -timeout 40m -tags wasmtime .
	WASMPY_STRICT=1 WASMPY_ENGINE=wasmtime $(GO) test -count=1 -race -timeout 40m -tags wasmtime -run 'Session|Engine' ./cmd/wasmpy ./runs ./service
else
	@echo "make: no cgo or C compiler here (or no wasmtime library for this platform): the wasmtime engine's tests skip"
endif
	$(MAKE) --no-print-directory test-python
	$(MAKE) --no-print-directory test-mcp-ts
	WASMPY_ENGINE=wazero $(MAKE) --no-print-directory soak
ifeq ($(WASMTIME),1)
	WASMPY_ENGINE=wasmtime $(MAKE) --no-print-directory soak
endif
	$(GO) run ./internal/testing/clustertest -wasmpy bin/wasmpy

PYTHON ?= python3
# (in a runtime dir of its own: the resident `wasmpy exec` starts is stopped after)
test-python: all
	rt=$$(mktemp -d) && trap 'XDG_RUNTIME_DIR=$$rt $(abspath bin/wasmpy) resident stop; rm -rf $$rt' EXIT && \
	cd python && XDG_RUNTIME_DIR=$$rt WASMPY_BIN=$(abspath bin/wasmpy) $(PYTHON) -m unittest discover -s tests -v

# The TypeScript SDK, pinned by its package-lock.json, goes into a
# gitignored node_modules under testdata (which the go tool skips).
TSCLIENT = mcpserver/testdata/tsclient
$(TSCLIENT)/node_modules/.package-lock.json: $(TSCLIENT)/package.json $(TSCLIENT)/package-lock.json
	@command -v npm >/dev/null || { echo "make: test-mcp-ts needs Node.js 18+ and npm"; exit 1; }
	npm ci --prefix $(TSCLIENT) --no-audit --no-fund

test-mcp-ts: wasmpy $(TSCLIENT)/node_modules/.package-lock.json
	node $(TSCLIENT)/client.mjs bin/wasmpy

test-cpython: all
	WASMPY_CPYTHON=all $(GO) test -count=1 -v -timeout 6h -run '^TestCPython$$' ./internal/cpythontest

test-numpy: all
	WASMPY_NUMPY_TESTS=$${WASMPY_NUMPY_TESTS:-all} $(GO) test -count=1 -v -timeout 6h -run '^TestNumpySuite$$' ./internal/numpytest

test-pandas: all
	WASMPY_PANDAS_TESTS=$${WASMPY_PANDAS_TESTS:-all} $(GO) test -count=1 -v -timeout 24h -run '^TestPandasSuite$$' ./internal/numpytest

bench: all packages
	$(GO) test -run '^$$' -bench . -benchtime 3s -count 1 ./...

FUZZTIME ?= 30s
FUZZFLAGS ?=
FUZZ ?= .
# Every func Fuzz* in the tree, one at a time (go test fuzzes one target per
# run), or those whose names match the regexp FUZZ; a failure is reported and
# the others still run. /usr/bin/time gives
# each target's CPU time, and the total is summed at the end. Minimizing a new
# input gets 10s, not 60s: the targets that run the interpreter would spend
# most of their time minimizing.
fuzz: all
	@rm -f bin/fuzz-times; failed=""; \
	for file in $$(grep -rl --include='*_test.go' '^func Fuzz' .); do \
	  pkg=./$$(dirname $${file#./}); \
	  for fn in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$file | grep -E '$(FUZZ)'); do \
	    echo "== $$pkg $$fn ($(FUZZTIME))"; \
	    /usr/bin/time -a -o bin/fuzz-times -f "$$pkg $$fn %e %U %S" \
	      $(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 10s $(FUZZFLAGS) $$pkg || failed="$$failed $$pkg:$$fn"; \
	  done; \
	done; \
	grep '^\./' bin/fuzz-times | awk '{printf "%-22s %-24s wall %7.1fs  cpu %7.1fs\n", $$1, $$2, $$3, $$4+$$5; w+=$$3; c+=$$4+$$5} \
	  END {printf "fuzz: %d targets, wall %.1fs, cpu %.1fs (%.2f cpu-hours)\n", NR, w, c, c/3600}'; \
	if [ -n "$$failed" ]; then echo "fuzz: failures (inputs saved under testdata/fuzz):$$failed"; exit 1; fi

cluster-test: all setup
	$(GO) run ./internal/testing/clustertest -wasmpy bin/wasmpy

DURATION ?= 30s
soak: all
	$(GO) run ./internal/testing/soak -wasmpy bin/wasmpy -duration $(DURATION)

clean:
	rm -rf bin dist
