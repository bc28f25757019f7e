//go:build linux

// Command run times the toy interpreters gen.py writes: WASI commands under
// wazero and wasmtime, plain and instrumented with internal/fuel as wasmpy
// instruments its interpreter, beside native builds of the same source,
// interleaved: each round runs every configuration of every program once,
// wasm ones in a fresh instance of their precompiled module. It prints the
// minimum and median CPU time of each (the calling thread's for wasm, the
// child's for native: the machine is shared, wall time is noise), the fuel
// used and the output, which must be the same in every round.
//
//	go build -tags wasmtime -o run ./assets/build/experiments/tailcall/run
//	run -engines wazero,wasmtime -fuel both -rounds 5 -native native_SWITCH_220,native_TAIL_220 SWITCH_220.wasm TAIL_220.wasm
package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/wasmpy/wasmpy/internal/fuel"
)

// runner runs a program once and returns its stdout, the fuel it used (0 if
// not instrumented) and the CPU seconds it took.
type runner func() (string, int64, float64, error)

// budget is the fuel an instrumented run gets: more than it can spend.
const budget = math.MaxInt64 / 2

// engines: name -> compile(wasm, tailCallFeature) -> a runner of _start.
var engines = map[string]func(wasm []byte, tail bool) (runner, error){}

type config struct {
	name string
	run  runner
	cpu  []float64
	out  string
	fuel int64
}

func main() {
	names := flag.String("engines", "wazero", "comma-separated: wazero, wasmtime (a binary built with -tags wasmtime)")
	fuelMode := flag.String("fuel", "off", "off, on or both: instrument with internal/fuel (a budget set once, no refuel)")
	rounds := flag.Int("rounds", 5, "interleaved rounds")
	tail := flag.Bool("tailcall", true, "enable the engines' tail-call feature")
	native := flag.String("native", "", "comma-separated native executables to run beside")
	flag.Parse()
	if err := run(strings.Split(*names, ","), *fuelMode, *tail, *rounds, *native, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "run:", err)
		os.Exit(1)
	}
}

func run(names []string, fuelMode string, tail bool, rounds int, native string, files []string) error {
	var fuels []bool
	switch fuelMode {
	case "off":
		fuels = []bool{false}
	case "on":
		fuels = []bool{true}
	case "both":
		fuels = []bool{false, true}
	default:
		return fmt.Errorf("-fuel %q: want off, on or both", fuelMode)
	}
	if len(files) == 0 || rounds < 1 {
		return errors.New("usage: run [-engines E,...] [-fuel off|on|both] [-rounds N] [-native BIN,...] MODULE.wasm...")
	}
	var configs []*config
	if native != "" {
		for _, bin := range strings.Split(native, ",") {
			configs = append(configs, &config{name: bin + " (native)", run: nativeRunner(bin)})
		}
	}
	for _, f := range files {
		wasm, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		for _, metered := range fuels {
			code := wasm
			if metered {
				if code, err = fuel.Instrument(wasm, nil); err != nil {
					return fmt.Errorf("%s: instrument: %w", f, err)
				}
			}
			for _, e := range names {
				compile, ok := engines[e]
				if !ok {
					return fmt.Errorf("unknown engine %q (wasmtime needs -tags wasmtime)", e)
				}
				r, err := compile(code, tail)
				if err != nil {
					return fmt.Errorf("%s: %s: compile: %w", f, e, err)
				}
				name := f + " " + e
				if metered {
					name += "+fuel"
				}
				configs = append(configs, &config{name: name, run: r})
			}
		}
	}
	runtime.LockOSThread()
	for r := 0; r < rounds; r++ {
		for _, c := range configs {
			out, used, cpu, err := c.run()
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			if r == 0 {
				c.out, c.fuel = out, used
			} else if out != c.out || used != c.fuel {
				return fmt.Errorf("%s: output or fuel changed: %q %d then %q %d", c.name, c.out, c.fuel, out, used)
			}
			c.cpu = append(c.cpu, cpu)
		}
	}
	fmt.Printf("rounds=%d, CPU seconds\n\n| program | min | median | fuel | output |\n|---|---:|---:|---:|---|\n", rounds)
	for _, c := range configs {
		fmt.Printf("| %s | %.3f | %.3f | %d | %s |\n", c.name, slices.Min(c.cpu), median(c.cpu), c.fuel, strings.TrimSpace(c.out))
	}
	return nil
}

func nativeRunner(bin string) runner {
	return func() (string, int64, float64, error) {
		cmd := exec.Command(bin)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return "", 0, 0, err
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		return string(out), 0, seconds(ru), nil
	}
}

// timed runs f and returns the CPU seconds the calling (locked) thread spent.
func timed(f func() error) (float64, error) {
	var a, b syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &a); err != nil {
		return 0, err
	}
	err := f()
	if err2 := syscall.Getrusage(1, &b); err2 != nil {
		return 0, err2
	}
	return seconds(&b) - seconds(&a), err
}

func seconds(ru *syscall.Rusage) float64 {
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
