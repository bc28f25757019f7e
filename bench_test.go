package wasmpy_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/hostfuncs"
)

// The benchmarks put every sandbox figure beside native python3 measured in
// the same run: BENCHMARKS.md records ratios, which survive a noisy machine.
//
//	go test -run '^$' -bench . -benchtime 3s

// baselineKinds is the interpreter of $WASMPY_BENCH_BASELINE (a build
// directory), as "baseline" beside "wasmpy": a change to the interpreter
// build is measured against the previous build in the same run.
func baselineKinds() []string {
	if os.Getenv("WASMPY_BENCH_BASELINE") == "" {
		return nil
	}
	return []string{"baseline"}
}

// BenchmarkPrint1 is a fresh isolated run of print(1), start to result, and
// reports its p50. Back to back, every run also pays for parking the
// instance of the next one; "spaced" runs arrive 10 ms apart, as requests
// to a service do, and find that instance ready.
func BenchmarkPrint1(b *testing.B) {
	job := wasmpy.Job{Code: "print(1)"}
	kinds := append([]string{"wasmpy", "wasmpy-spaced", "sci", "npm"}, otherEngines("wasmpy")...)
	for _, kind := range append(append(kinds, otherEngines("wasmpy-spaced")...), baselineKinds()...) {
		b.Run(kind, func(b *testing.B) {
			sb := benchSandbox(b, strings.Replace(kind, "-spaced", "", 1))
			var times []time.Duration
			for b.Loop() {
				if strings.Contains(kind, "-spaced") {
					time.Sleep(10 * time.Millisecond) // in ns/op, not in p50-ms
				}
				start := time.Now()
				res, err := sb.Run(context.Background(), job)
				times = append(times, time.Since(start))
				require.NoError(b, err)
				require.Equal(b, "1\n", res.Stdout)
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2])/1e6, "p50-ms")
		})
	}
	b.Run("python3", func(b *testing.B) { benchNative(b, "-c", "print(1)") })
}

func BenchmarkCPU(b *testing.B) {
	code, err := os.ReadFile("testdata/bench/cpu.py")
	require.NoError(b, err)
	job := wasmpy.Job{Code: string(code)}
	for _, kind := range []string{"wasmpy", "npm"} {
		b.Run(kind, func(b *testing.B) {
			sb := benchSandbox(b, kind)
			for b.Loop() {
				res, err := sb.Run(context.Background(), job)
				require.NoError(b, err)
				require.Nil(b, res.Error, res.Stderr)
			}
		})
	}
	b.Run("python3", func(b *testing.B) { benchNative(b, "testdata/bench/cpu.py") })
}

// BenchmarkNew is a process's first run: load, compile (from the warm
// cache), initialise, run print(1).
func BenchmarkNew(b *testing.B) {
	for b.Loop() {
		sb, err := wasmpy.New(context.Background(), wasmpy.Config{Interpreter: "wasmpy"})
		require.NoError(b, err)
		res, err := sb.Run(context.Background(), wasmpy.Job{Code: "print(1)"})
		require.NoError(b, err)
		require.Equal(b, "1\n", res.Stdout)
		sb.Close(context.Background())
	}
}

// BenchmarkCLI is `wasmpy exec hello.py` from start to exit, beside
// `python3 hello.py`: handed to the resident process (started and warmed
// first), with the default and the sci (numpy) interpreter, and in-process
// (WASMPY_RESIDENT=0).
func BenchmarkCLI(b *testing.B) {
	bin, err := filepath.Abs("bin/wasmpy")
	require.NoError(b, err)
	_, err = os.Stat(bin)
	require.NoError(b, err, "run make first")
	script := "testdata/scripts/hello.py"
	out, err := exec.Command(bin, "resident", "start").CombinedOutput()
	require.NoError(b, err, "%s", out)
	for _, kind := range append([]string{"wasmpy", "sci", "wasmpy-in-process"}, baselineKinds()...) {
		args := []string{"exec", script}
		if kind == "sci" {
			args = []string{"exec", "--interpreter", "sci", script}
		}
		if kind == "baseline" {
			args = []string{"exec", "--interpreter", os.Getenv("WASMPY_BENCH_BASELINE"), script}
		}
		b.Run(kind, func(b *testing.B) {
			run := func() {
				cmd := exec.Command(bin, args...)
				if kind == "wasmpy-in-process" {
					cmd.Env = append(os.Environ(), "WASMPY_RESIDENT=0")
				}
				out, err := cmd.Output()
				require.NoError(b, err)
				require.Equal(b, "hello, world\n", string(out))
			}
			run() // the resident loads this configuration once
			for b.Loop() {
				run()
			}
		})
	}
	b.Run("python3", func(b *testing.B) { benchNative(b, script) })
}

// BenchmarkPrintPiped is a script printing a million lines (6.9 MB) into
// a pipe: streamed as written (exec's default), captured whole for --json,
// and native python3.
func BenchmarkPrintPiped(b *testing.B) {
	bin, err := filepath.Abs("bin/wasmpy")
	require.NoError(b, err)
	_, err = os.Stat(bin)
	require.NoError(b, err, "run make first")
	script := "testdata/bench/print.py"
	const size = 6888890
	piped := func(b *testing.B, name string, args ...string) {
		b.SetBytes(size)
		for b.Loop() {
			cmd := exec.Command(name, args...)
			out, err := cmd.StdoutPipe()
			require.NoError(b, err)
			require.NoError(b, cmd.Start())
			n, err := io.Copy(io.Discard, out)
			require.NoError(b, err)
			require.NoError(b, cmd.Wait())
			if slices.Contains(args, "--json") {
				require.Greater(b, n, int64(size))
			} else {
				require.Equal(b, int64(size), n)
			}
		}
	}
	b.Run("wasmpy-streamed", func(b *testing.B) { piped(b, bin, "exec", "--timeout", "10m", script) })
	b.Run("wasmpy-json", func(b *testing.B) { piped(b, bin, "exec", "--json", "--timeout", "10m", "--output-limit", "0", script) })
	b.Run("python3", func(b *testing.B) { piped(b, nativePython(b), script) })
}

func benchSandbox(b *testing.B, kind string) *wasmpy.Sandbox {
	if kind == "baseline" {
		kind = os.Getenv("WASMPY_BENCH_BASELINE")
	}
	kind, eng, _ := strings.Cut(kind, "@") // wasmpy@wasmtime: on that engine
	sb, err := wasmpy.New(context.Background(), wasmpy.Config{Interpreter: kind, Engine: eng})
	require.NoError(b, err)
	b.Cleanup(func() { sb.Close(context.Background()) })
	// One run first, so the benchmark measures runs, not the first one.
	_, err = sb.Run(context.Background(), wasmpy.Job{Code: "pass"})
	require.NoError(b, err)
	return sb
}

// otherEngines are kind on each engine but the default, as kind@engine
// (wasmpy-spaced@wasmtime: spaced runs on wasmtime),
// for a benchmark to measure beside the default's.
func otherEngines(kind string) []string {
	var kinds []string
	for _, e := range wasmpy.Engines()[1:] {
		kinds = append(kinds, kind+"@"+e)
	}
	return kinds
}

// nativePython is the python3 on PATH, itself, not a wrapper such as
// pyenv's shim, which would add a shell's start to each run.
func nativePython(b *testing.B) string {
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	require.NoError(b, err, "the yardstick needs python3 on PATH")
	return strings.TrimSpace(string(out))
}

// benchNative times native python3.
func benchNative(b *testing.B, args ...string) {
	python := nativePython(b)
	for b.Loop() {
		require.NoError(b, exec.Command(python, args...).Run())
	}
}

// BenchmarkHostCall is one guest→Go→guest round trip (a capability that
// returns its argument), a 1 MiB read_file and write_file, and the same file
// read with open().read() through the workspace file system: each op is a
// run of n calls minus a run of none, divided by n.
func BenchmarkHostCall(b *testing.B) {
	dir := b.TempDir()
	require.NoError(b, os.WriteFile(filepath.Join(dir, "mib.bin"), make([]byte, 1<<20), 0o644))
	for _, eng := range wasmpy.Engines() {
		b.Run(eng, func(b *testing.B) { benchHostCall(b, dir, eng) })
	}
}

func benchHostCall(b *testing.B, dir, eng string) {
	sb, err := wasmpy.New(context.Background(), wasmpy.Config{Interpreter: "wasmpy", Engine: eng,
		HostFuncs: hostfuncs.Table{"echo": hostfuncs.Typed(func(ctx context.Context, a struct{ X int }) (int, error) { return a.X, nil })},
		Grants:    []wasmpy.Capability{"echo", wasmpy.ReadFile, wasmpy.WriteFile}})
	require.NoError(b, err)
	b.Cleanup(func() { sb.Close(context.Background()) })
	for _, tc := range []struct {
		name, call string
		n          int
	}{
		{"roundtrip", "echo(X=1)", 20000},
		{"read_file_1MiB", "read_file('mib.bin', binary=True)", 50},
		{"write_file_1MiB", "write_file('out.bin', mib)", 50},
		{"open_read_1MiB", "open('mib.bin', 'rb').read()", 50},
	} {
		b.Run(tc.name, func(b *testing.B) {
			timed := func(n int) time.Duration {
				res, err := sb.Run(context.Background(), wasmpy.Job{Workspace: dir,
					Code: fmt.Sprintf("import time\nmib = bytes(1 << 20)\nt = time.perf_counter()\nfor _ in range(%d):\n    %s\nprint(time.perf_counter() - t)", n, tc.call)})
				require.NoError(b, err)
				require.Nil(b, res.Error, res.Stderr)
				var s float64
				_, err = fmt.Sscan(res.Stdout, &s)
				require.NoError(b, err)
				return time.Duration(s * float64(time.Second))
			}
			var total time.Duration
			for b.Loop() {
				total += timed(tc.n) - timed(0)
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N*tc.n), "ns/call")
		})
	}
}

// BenchmarkStopLatency is how long after its wall-clock limit a run's
// result comes back (the overshoot), for code that spends its time in
// Python, in long C calls, or asleep; "loaded" runs it with both cores
// kept busy by other processes. It reports the p50 and p99 over every run.
func BenchmarkStopLatency(b *testing.B) {
	const limit = 200 * time.Millisecond
	workloads := map[string]string{
		"python loop": "while True: pass\n",
		"C loop":      "sum(range(10**15))\n",
		"zlib":        "import zlib\nc = zlib.compressobj(9)\ndata = bytes(range(256)) * 16384\nwhile True: c.compress(data)\n",
		"bigint":      "10**(10**10)\n",
		"regex":       "import re\nre.match(r'(a+)+$', 'a' * 64 + 'b')\n",
		"sleep":       "import time\ntime.sleep(60)\n",
	}
	sb := benchSandbox(b, "wasmpy")
	for _, load := range []string{"idle", "loaded"} {
		b.Run(load, func(b *testing.B) {
			if load == "loaded" {
				for range runtime.NumCPU() {
					busy := exec.Command("sh", "-c", "while :; do :; done")
					require.NoError(b, busy.Start())
					b.Cleanup(func() { busy.Process.Kill(); busy.Wait() })
				}
			}
			var over []time.Duration
			for b.Loop() {
				for name, code := range workloads {
					start := time.Now()
					res, err := sb.Run(context.Background(), wasmpy.Job{Code: code, Limits: wasmpy.Limits{Timeout: limit}})
					over = append(over, time.Since(start)-limit)
					require.NoError(b, err)
					require.NotNil(b, res.Error, name)
					require.Equal(b, wasmpy.KindTimeout, res.Error.Kind, "%s: %+v", name, res.Error)
				}
			}
			slices.Sort(over)
			b.ReportMetric(float64(over[len(over)/2])/1e6, "p50-overshoot-ms")
			b.ReportMetric(float64(over[len(over)*99/100])/1e6, "p99-overshoot-ms")
			b.ReportMetric(float64(over[len(over)-1])/1e6, "max-overshoot-ms")
		})
	}
}

// BenchmarkRunRSS is the host memory N concurrent runs take: the peak RSS
// of this process while they run, less what it held before, per run. Each
// run either fills its guest memory to the limit, or compiles and runs a
// 50 MiB script (one string, shared by the N jobs as a caller's would be).
func BenchmarkRunRSS(b *testing.B) {
	const limit = 256 << 20
	script := strings.Repeat("# "+strings.Repeat("a", 1000)+"\n", 50<<10) + "print('ran')\n"
	for _, kind := range append([]string{"wasmpy"}, otherEngines("wasmpy")...) {
		b.Run(kind, func(b *testing.B) { benchRunRSS(b, benchSandbox(b, kind), limit, script) })
	}
}

func benchRunRSS(b *testing.B, sb *wasmpy.Sandbox, limit uint64, script string) {
	for _, tc := range []struct {
		name string
		code string
		ns   []int
	}{
		{"fill memory", "xs = []\nwhile True: xs.append(bytearray(1 << 20))\n", []int{1, 4, 8}},
		{"50MiB script", script, []int{1, 4}},
	} {
		for _, n := range tc.ns {
			b.Run(fmt.Sprintf("%s/N=%d", tc.name, n), func(b *testing.B) {
				job := wasmpy.Job{Code: tc.code, Limits: wasmpy.Limits{Memory: limit, Timeout: 5 * time.Minute}}
				var worst float64
				for b.Loop() {
					before := settledRSS(b)
					require.NoError(b, os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)) // resets VmHWM
					var wg sync.WaitGroup
					for range n {
						wg.Add(1)
						go func() {
							defer wg.Done()
							res, err := sb.Run(context.Background(), job)
							require.NoError(b, err)
							if res.Error != nil {
								require.Equal(b, wasmpy.KindMemory, res.Error.Kind, res.Stderr)
							}
						}()
					}
					wg.Wait()
					worst = max(worst, (procStatusMiB(b, "VmHWM")-before)/float64(n))
				}
				b.ReportMetric(worst, "MiB/run")
				b.ReportMetric(float64(limit>>20), "limit-MiB")
			})
		}
	}
}

// settledRSS is this process's RSS once the instances of earlier runs,
// released in the background, are gone.
func settledRSS(b *testing.B) float64 {
	rss := procStatusMiB(b, "VmRSS")
	for range 50 {
		runtime.GC()
		time.Sleep(100 * time.Millisecond)
		now := procStatusMiB(b, "VmRSS")
		if now > rss-1 {
			return now
		}
		rss = now
	}
	return rss
}

// procStatusMiB reads a field of /proc/self/status, in MiB.
func procStatusMiB(b *testing.B, field string) float64 {
	status, err := os.ReadFile("/proc/self/status")
	require.NoError(b, err)
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			var kb float64
			_, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), &kb)
			require.NoError(b, err)
			return kb / 1024
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// BenchmarkPrintHeavy is a script printing 300,000 lines: what the
// guest's unbuffered streams cost (every write reaches the host at once, so
// nothing is lost when a run is stopped), in process and through the CLI,
// piped, beside native python3 piped.
func BenchmarkPrintHeavy(b *testing.B) {
	const code = "for i in range(300000):\n    print(i)\n"
	b.Run("wasmpy", func(b *testing.B) {
		sb := benchSandbox(b, "wasmpy")
		for b.Loop() {
			res, err := sb.Run(context.Background(), wasmpy.Job{Code: code, Limits: wasmpy.Limits{Output: 64 << 20}})
			require.NoError(b, err)
			require.Nil(b, res.Error, res.Stderr)
		}
	})
	b.Run("wasmpy-cli", func(b *testing.B) {
		bin, err := filepath.Abs("bin/wasmpy")
		require.NoError(b, err)
		for b.Loop() {
			out, err := exec.Command(bin, "exec", "--output-limit", "64MiB", "-c", code).Output()
			require.NoError(b, err)
			require.True(b, strings.HasSuffix(string(out), "299999\n"))
		}
	})
	b.Run("python3", func(b *testing.B) { benchNative(b, "-c", code) })
}
