package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy"
)

// Flags shared by the commands that run code.
var (
	interpreterFlag = &cli.StringFlag{Name: "interpreter", EnvVars: []string{"WASMPY_INTERPRETER"},
		Usage: "interpreter: wasmpy, npm, or the path of a python.wasm (default: the best installed)"}
	cacheFlag = &cli.StringFlag{Name: "cache-dir", EnvVars: []string{"WASMPY_CACHE_DIR"},
		Usage: "where interpreters and compiled code are cached (default: the user cache dir)"}
	timeoutFlag = &cli.StringFlag{Name: "timeout", Value: "30s", Usage: "wall-clock limit, e.g. 500ms, 2s, 1m"}
	memoryFlag  = &cli.StringFlag{Name: "memory", Value: "256MiB", Usage: "guest memory limit, e.g. 64MiB, 1GiB"}
	outputFlag  = &cli.StringFlag{Name: "output-limit", Value: "4MiB", Usage: "bytes kept per stream (stdout, stderr)"}
)

func limitFlags() []cli.Flag { return []cli.Flag{timeoutFlag, memoryFlag, outputFlag} }

// limits reads the limit flags.
func limits(c *cli.Context) (wasmpy.Limits, error) {
	var l wasmpy.Limits
	d, err := time.ParseDuration(c.String("timeout"))
	if err != nil || d <= 0 {
		return l, usageErr("--timeout %q: want a positive duration such as 500ms, 2s or 1m", c.String("timeout"))
	}
	l.Timeout = d
	if l.Memory, err = parseSize(c.String("memory")); err != nil || l.Memory == 0 {
		return l, usageErr("--memory %q: want a positive size such as 64MiB or 1GiB", c.String("memory"))
	}
	if l.Memory > 4<<30 {
		return l, usageErr("--memory %q: at most 4GiB (the wasm32 address space)", c.String("memory"))
	}
	out, err := parseSize(c.String("output-limit"))
	if err != nil || out == 0 || out > 1<<30 {
		return l, usageErr("--output-limit %q: want a size from 1B to 1GiB", c.String("output-limit"))
	}
	l.Output = int(out)
	return l, nil
}

// parseSize reads "64MiB", "1GiB", "512K", "1000": binary units, plus the
// decimal kB/MB/GB.
func parseSize(s string) (uint64, error) {
	units := []struct {
		suffix string
		mult   uint64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
		{"kB", 1000}, {"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1},
	}
	s = strings.TrimSpace(s)
	mult := uint64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad size")
	}
	if n > (1<<63)/mult {
		return 0, fmt.Errorf("size too large")
	}
	return n * mult, nil
}

// newSandbox opens a sandbox with the interpreter and cache flags.
func newSandbox(c *cli.Context, cfg wasmpy.Config) (*wasmpy.Sandbox, error) {
	cfg.Interpreter = c.String("interpreter")
	cfg.CacheDir = c.String("cache-dir")
	sb, err := wasmpy.New(c.Context, cfg)
	if err != nil {
		return nil, &exitError{code: exitWasmpy, msg: strings.TrimPrefix(oneLine(err), "wasmpy: ")}
	}
	return sb, nil
}
