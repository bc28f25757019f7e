package cpythontest

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/internal/testing/needs"
	"github.com/wasmpy/wasmpy/workspace"
)

//go:embed driver.py
var driver string

//go:embed expected_failures.txt
var expectedFailures string

// fast is the subset `make test` runs (1,474 tests, about 19 s of CPU):
// modules that run fast in the sandbox and cover the language, asyncio and
// the interpreter's own state. WASMPY_CPYTHON=all runs every module in all
// (what `make test-cpython` does), or names the modules.
var fast = []string{"test_json", "test_asyncio.test_futures", "test_asyncio.test_queues", "test_sys",
	"test_asyncgen", "test_contextlib", "test_copy", "test_dataclasses", "test_exception_group",
	"test_grammar", "test_patma", "test_tomllib"}

// all: the core modules, and test_asyncio's modules that need no sockets,
// subprocesses or threads.
var all = []string{
	"test_abc", "test_argparse", "test_ast", "test_base64", "test_bisect", "test_bool",
	"test_builtin", "test_bytes", "test_calendar", "test_class", "test_collections",
	"test_compile", "test_complex", "test_contextlib", "test_copy", "test_coroutines",
	"test_csv", "test_dataclasses", "test_datetime", "test_decimal", "test_descr",
	"test_dict", "test_difflib", "test_enum", "test_exceptions", "test_float",
	"test_fractions", "test_fstring", "test_functools", "test_generators", "test_glob",
	"test_grammar", "test_hashlib", "test_heapq", "test_importlib", "test_inspect",
	"test_int", "test_itertools", "test_json", "test_keywordonlyarg", "test_list",
	"test_logging", "test_long", "test_math", "test_operator", "test_os", "test_pathlib",
	"test_pickle", "test_pprint", "test_random", "test_re", "test_scope", "test_set",
	"test_shlex", "test_slice", "test_sort", "test_statistics", "test_string",
	"test_struct", "test_sys", "test_textwrap", "test_tokenize", "test_traceback",
	"test_tuple", "test_types", "test_typing", "test_str", "test_unittest",
	"test_userdict", "test_uuid", "test_weakref", "test_with", "test_zipfile", "test_zlib",
	"test_array", "test_asyncgen", "test_binascii", "test_codecs", "test_configparser",
	"test_contextlib_async", "test_email", "test_except_star", "test_exception_group",
	"test_getopt", "test_gzip", "test_optparse", "test_patma", "test_shutil", "test_sqlite3",
	"test_strptime", "test_tarfile", "test_tempfile", "test_time", "test_tomllib",
	"test_unicodedata", "test_urlparse",
	"test_asyncio.test_context", "test_asyncio.test_eager_task_factory",
	"test_asyncio.test_futures", "test_asyncio.test_futures2", "test_asyncio.test_locks",
	"test_asyncio.test_pep492", "test_asyncio.test_protocols", "test_asyncio.test_queues",
	"test_asyncio.test_runners", "test_asyncio.test_taskgroups", "test_asyncio.test_tasks",
	"test_asyncio.test_timeouts", "test_asyncio.test_transports", "test_asyncio.test_waitfor",
}

// testLimits are the workspace limits the tests need, above the defaults:
// test_zipfile writes a 19 MB file, and zips all of Lib/test's bytecode
// (1,054 modules) into /tmp; at a limit the guest sees EIO (WASI has no
// EFBIG or ENOSPC).
var testLimits = workspace.Config{MaxFileBytes: 256 << 20, MaxOverlayBytes: 768 << 20, MaxFiles: 10000}

// report is the driver's last line of output.
type report struct {
	Module   string            `json:"module"`
	Outcomes map[string]string `json:"outcomes"`
	Reasons  map[string]string `json:"reasons"`
	Skipped  *string           `json:"skipped"`
	Error    *string           `json:"error"`
	Seconds  float64           `json:"seconds"`
}

func (r *report) count(outcome string) int {
	n := 0
	for _, o := range r.Outcomes {
		if o == outcome {
			n++
		}
	}
	return n
}

func (r *report) String() string {
	switch {
	case r.Error != nil:
		return "error: " + *r.Error
	case r.Skipped != nil:
		return "skipped: " + *r.Skipped
	}
	return fmt.Sprintf("%5d pass %4d fail %4d skip", r.count("pass"), r.count("fail"), r.count("skip"))
}

// TestCPython runs each module natively and in the sandbox, and fails on a
// test that fails only in the sandbox and is not an expected failure, and
// on an expected failure of a module it ran that did not fail so (so the
// list cannot rot).
func TestCPython(t *testing.T) {
	work := os.Getenv("WASMPY_BUILD_DIR")
	if work == "" {
		cache, err := os.UserCacheDir()
		require.NoError(t, err)
		work = filepath.Join(cache, "wasmpy", "build")
	}
	lib := filepath.Join(work, "src", "python", "Lib")
	native := filepath.Join(work, "native", "python")
	for _, p := range []string{filepath.Join(lib, "test", "support"), native} {
		if _, err := os.Stat(p); err != nil {
			needs.Skipf(t, "needs the interpreter build's work dir (run `make`; WASMPY_BUILD_DIR): %v", err)
		}
	}
	modules := fast
	switch sel := os.Getenv("WASMPY_CPYTHON"); sel {
	case "":
	case "all":
		modules = all
	default:
		modules = strings.Fields(sel)
	}
	expected := parseExpected(t, expectedFailures)
	sb, err := wasmpy.New(context.Background(), wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER"), Workspace: testLimits})
	require.NoError(t, err)
	defer sb.Close(context.Background())
	if sb.Interpreter().Kind != "core" {
		t.Skip("CPython's tests are run on the core build")
	}
	driverPath := filepath.Join(t.TempDir(), "driver.py")
	require.NoError(t, os.WriteFile(driverPath, []byte(driver), 0o644))

	var totals [2]map[string]int
	for i := range totals {
		totals[i] = map[string]int{}
	}
	used := map[string]bool{}
	var unexpected, ran []string // ran: the modules whose tests ran in the sandbox
	t.Logf("%-40s %-32s %-32s", "module", "native", "wasm")
	for _, mod := range modules {
		was := runWasm(t, sb, lib, mod)
		if was.Error != nil && strings.Contains(*was.Error, "No module named 'test'") {
			t.Fatalf("the sandbox cannot see Lib/test, mounted as the workspace: %s", *was.Error)
		}
		if was.Error == nil && was.Skipped == nil {
			ran = append(ran, mod)
		}
		nat := runNative(t, native, driverPath, lib, mod)
		for i, r := range []*report{nat, was} {
			for _, o := range []string{"pass", "fail", "skip"} {
				totals[i][o] += r.count(o)
			}
		}
		var only []string
		if was.Error != nil && nat.Error == nil {
			only = append(only, mod)
		}
		for id, o := range was.Outcomes {
			if o == "fail" && nat.Outcomes[id] != "fail" {
				only = append(only, id)
			}
		}
		notRun := 0 // passed natively, skipped or absent in the sandbox
		for id, o := range nat.Outcomes {
			if o == "pass" && was.Outcomes[id] != "pass" && was.Outcomes[id] != "fail" {
				notRun++
			}
		}
		sort.Strings(only)
		var bad []string
		for _, id := range only {
			if pat := match(expected, id); pat != "" {
				used[pat] = true
			} else {
				bad = append(bad, id)
			}
		}
		t.Logf("%-40s %-32s %-32s %4.0fs %d not run, %d wasm-only failures (%d expected)",
			mod, nat, was, was.Seconds, notRun, len(only), len(only)-len(bad))
		for _, id := range bad {
			t.Logf("    unexpected wasm-only failure: %s: %s", id, was.Reasons[id])
		}
		unexpected = append(unexpected, bad...)
	}
	t.Logf("totals: native %d pass %d fail %d skip; wasm %d pass %d fail %d skip",
		totals[0]["pass"], totals[0]["fail"], totals[0]["skip"], totals[1]["pass"], totals[1]["fail"], totals[1]["skip"])
	stale := unfailed(expected, used, ran)
	for _, pat := range stale {
		t.Logf("expected failure that did not fail: %s", pat)
	}
	require.Empty(t, unexpected, "tests that fail only in the sandbox: fix them, or list them with a reason in expected_failures.txt")
	require.Empty(t, stale, "expected failures of modules run that did not fail: remove them from expected_failures.txt")
}

// unfailed are the expected failures of the modules in ran that matched no
// wasm-only failure: fixed, or failing natively too, or gone.
func unfailed(expected map[string]string, used map[string]bool, ran []string) []string {
	var out []string
	for pat := range expected {
		if !used[pat] && moduleOf(pat, ran) != "" {
			out = append(out, pat)
		}
	}
	sort.Strings(out)
	return out
}

// moduleOf is the module of modules a pattern's tests belong to (a module
// name itself, or test.MODULE.REST), or "".
func moduleOf(pat string, modules []string) string {
	for _, mod := range modules {
		if pat == mod || pat == "test."+mod || strings.HasPrefix(pat, "test."+mod+".") {
			return mod
		}
	}
	return ""
}

// runNative runs the driver under the native build of the same source.
func runNative(t *testing.T, python, driverPath, lib, mod string) *report {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, driverPath, lib, mod)
	cmd.Env = append(os.Environ(), "PYTHONHASHSEED=0")
	cmd.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := parseReport(stdout.Bytes())
	if r == nil {
		t.Fatalf("native %s: no report (%v): %s", mod, err, tail(stderr.Bytes()))
	}
	return r
}

// runWasm runs the driver in the sandbox, with Lib/ as the workspace's
// read-only layer (its test package goes last on sys.path).
func runWasm(t *testing.T, sb *wasmpy.Sandbox, lib, mod string) *report {
	res, err := sb.Run(context.Background(), wasmpy.Job{
		Code: driver, Filename: "driver.py", Args: []string{".", mod}, Workspace: lib,
		Limits: wasmpy.Limits{Timeout: 20 * time.Minute, Memory: 1 << 30},
	})
	require.NoError(t, err)
	if r := parseReport([]byte(res.Stdout)); r != nil {
		return r
	}
	why := "no report"
	if res.Error != nil {
		why = fmt.Sprintf("%s: %s", res.Error.Kind, res.Error.Message)
	}
	return &report{Module: mod, Error: &why}
}

func parseReport(stdout []byte) *report {
	stdout = bytes.TrimRight(stdout, "\n")
	var r report
	if err := json.Unmarshal(stdout[bytes.LastIndexByte(stdout, '\n')+1:], &r); err != nil || r.Module == "" {
		return nil
	}
	return &r
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// parseExpected reads "pattern  # reason" lines; a pattern is a test id or
// module name, with path.Match wildcards. Every entry must say why.
func parseExpected(t *testing.T, text string) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		pat, reason, ok := strings.Cut(line, "#")
		pat, reason = strings.TrimSpace(pat), strings.TrimSpace(reason)
		require.True(t, ok && reason != "", "expected_failures.txt:%d: %q gives no reason", n, pat)
		_, err := path.Match(pat, "")
		require.NoError(t, err, "expected_failures.txt:%d", n)
		out[pat] = reason
	}
	return out
}

// match returns the pattern id matches, or "".
func match(expected map[string]string, id string) string {
	for pat := range expected {
		if ok, _ := path.Match(pat, id); ok {
			return pat
		}
	}
	return ""
}
