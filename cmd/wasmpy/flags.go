package main

import (
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/assets"
	"github.com/wasmpy/wasmpy/hostfuncs"
	"github.com/wasmpy/wasmpy/internal/units"
	"github.com/wasmpy/wasmpy/llm"
	"github.com/wasmpy/wasmpy/workspace"
)

// Flags shared by the commands that run code.
var (
	interpreterFlag = &cli.StringFlag{Name: "interpreter", EnvVars: []string{"WASMPY_INTERPRETER"},
		Usage: "interpreter: core, sci (core with numpy), npm, or the path of a python.wasm (default: the best installed; wasmpy is core's former name)"}
	engineFlag = &cli.StringFlag{Name: "engine", EnvVars: []string{"WASMPY_ENGINE"},
		Usage: "engine that runs the interpreter: wasmtime (faster; only in a binary built with -tags wasmtime, and then the default) or wazero (pure Go; the default without)"}
	cacheFlag = &cli.StringFlag{Name: "cache-dir", EnvVars: []string{"WASMPY_CACHE_DIR"},
		Usage: "where interpreters and compiled code are cached (default: the user cache dir)"}
	timeoutFlag = &cli.StringFlag{Name: "timeout", Usage: "wall-clock limit, e.g. 500ms, 2s, 1m (default: the tier's)"}
	memoryFlag  = &cli.StringFlag{Name: "memory", Usage: "guest memory limit, e.g. 64MiB, 1GiB (default: the tier's)"}
	outputFlag  = &cli.StringFlag{Name: "output-limit", Usage: "bytes a stream (stdout, stderr) may carry before the run is stopped, e.g. 1MiB; 0 = no limit (default: the tier's; in trusted, none for exec's streamed output, else 4MiB)"}
	fuelFlag    = &cli.StringFlag{Name: "fuel", Usage: "deterministic compute budget in fuel units (default, or 0: the tier's; trusted is unmetered)"}
)

func limitFlags() []cli.Flag { return []cli.Flag{timeoutFlag, memoryFlag, outputFlag, fuelFlag} }

// execLimitFlags are exec's: its --timeout has no default, as python3 has
// no wall-clock limit.
func execLimitFlags() []cli.Flag {
	return []cli.Flag{&cli.StringFlag{Name: "timeout", Usage: "wall-clock limit, e.g. 500ms, 2s, 1m (default: none, as python3; with --tier, the tier's)"},
		memoryFlag, outputFlag, fuelFlag}
}

// capabilityFlags configure what a run may reach: its workspace, the LLM, imports.
func capabilityFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "workspace", Usage: "`DIR` the script reads as its workspace (never modified)"},
		&cli.StringFlag{Name: "out", Usage: "write the files the script wrote into `DIR`"},
		&cli.StringFlag{Name: "allow-import", Usage: "comma-separated `MODULES`: the only ones the script may import"},
		&cli.StringSliceFlag{Name: "packages", Usage: "mount the package set `SET.zip` (from `wasmpy pkg build`) read-only on sys.path; repeatable"},
		&cli.StringFlag{Name: "preload", Usage: "comma-separated `MODULES` imported once, before any run, so runs pay nothing to import them"},
		&cli.StringFlag{Name: "llm-base-url", EnvVars: []string{"WASMPY_LLM_BASE_URL", "OPENAI_BASE_URL"},
			Usage: "OpenAI-compatible API for ask_llm, e.g. http://127.0.0.1:11434/v1"},
		&cli.StringFlag{Name: "llm-model", EnvVars: []string{"WASMPY_LLM_MODEL", "OPENAI_MODEL"}, Usage: "model ask_llm, gen and def use"},
		&cli.StringFlag{Name: "llm-api-key", EnvVars: []string{"WASMPY_LLM_API_KEY", "OPENAI_API_KEY"}, Usage: "API key for the LLM"},
		&cli.StringFlag{Name: "llm-timeout", Value: llm.DefaultTimeout.String(), Usage: "limit of one LLM request (at most --timeout, where there is one)"},
		&cli.IntFlag{Name: "llm-max-calls", Usage: "ask_llm calls per run (0 = default 20)"},
		&cli.IntFlag{Name: "llm-max-tokens", Usage: "LLM tokens per run (0 = default 100000)"},
	}
}

// sandboxConfig reads the capability flags into a Config.
func sandboxConfig(c *cli.Context) (wasmpy.Config, error) {
	var cfg wasmpy.Config
	if dir := c.String("workspace"); dir != "" {
		fi, err := os.Stat(dir)
		if err != nil || !fi.IsDir() {
			return cfg, usageErr("--workspace %q: not a directory", dir)
		}
		cfg.Workspace.Stable = dir
	}
	if c.IsSet("allow-import") {
		cfg.AllowImports = append([]string{}, commaList(c.String("allow-import"))...)
	}
	cfg.Packages = c.StringSlice("packages")
	cfg.Preload = commaList(c.String("preload"))
	cfg.LLM = llm.Config{BaseURL: c.String("llm-base-url"), Model: c.String("llm-model"), APIKey: c.String("llm-api-key")}
	var err error
	if cfg.LLM.Timeout, err = llmTimeout(c); err != nil {
		return cfg, err
	}
	if c.Int("llm-max-calls") < 0 || c.Int("llm-max-tokens") < 0 {
		return cfg, usageErr("--llm-max-calls and --llm-max-tokens must not be negative")
	}
	cfg.LLMBudget = hostfuncs.LLMBudget{MaxCalls: c.Int("llm-max-calls"), MaxTokens: c.Int("llm-max-tokens")}
	return cfg, nil
}

// llmTimeout is --llm-timeout bounded by --timeout: a request that outlives
// the run it serves (or, for gen and def, each run of the code) helps no one.
func llmTimeout(c *cli.Context) (time.Duration, error) {
	d, err := time.ParseDuration(c.String("llm-timeout"))
	if err != nil || d <= 0 {
		return 0, usageErr("--llm-timeout %q: want a positive duration such as 30s or 2m", c.String("llm-timeout"))
	}
	run, err := time.ParseDuration(c.String("timeout"))
	if err != nil || run <= 0 || run >= d {
		return d, nil // no --timeout here, or a bad one that limits() reports
	}
	if c.IsSet("llm-timeout") {
		return 0, usageErr("--llm-timeout %s is longer than --timeout %s: it cannot be", d, run)
	}
	return run, nil
}

// commaList splits a comma-separated flag, dropping empty items.
func commaList(list string) []string {
	var items []string
	for _, m := range strings.Split(list, ",") {
		if m = strings.TrimSpace(m); m != "" {
			items = append(items, m)
		}
	}
	return items
}

// writeOut writes the files a run wrote into the --out directory, through
// an os.Root: nothing already in the directory leads a write outside it. A
// symlink where a file goes is replaced by the file; one on the way to it
// that leaves the directory is refused. Its error is one line that names
// the file (callers print their report first: --json's object is always
// there).
func writeOut(c *cli.Context, files []workspace.FileChange, file func(string) ([]byte, bool)) error {
	dir := c.String("out")
	if dir == "" {
		return nil
	}
	fail := func(name string, err error) error {
		msg := unwrap(err).Error()
		if strings.Contains(msg, "path escapes from parent") { // os.Root's refusal, not exported
			msg = "refused: a symlink on the way leads out of " + dir
		}
		if name != "" {
			msg = name + ": " + msg
		}
		return &exitError{code: exitWasmpy, msg: fmt.Sprintf("--out %s: %s", dir, msg)}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail("", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fail("", err)
	}
	defer root.Close()
	for _, f := range files {
		data, ok := file(f.Path)
		if !ok {
			continue
		}
		name := filepath.FromSlash(f.Path)
		if parent := filepath.Dir(name); parent != "." {
			if err := root.MkdirAll(parent, 0o755); err != nil {
				return fail(f.Path, err)
			}
		}
		if fi, err := root.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			if err := root.Remove(name); err != nil {
				return fail(f.Path, err)
			}
		}
		if err := root.WriteFile(name, data, 0o644); err != nil {
			return fail(f.Path, err)
		}
	}
	return nil
}

// limits reads the limit flags that are set; the others are zero (the
// tier's, or the service's default).
func limits(c *cli.Context) (wasmpy.Limits, error) {
	var l wasmpy.Limits
	var err error
	if c.IsSet("timeout") {
		d, err := time.ParseDuration(c.String("timeout"))
		if err != nil || d <= 0 {
			return l, usageErr("--timeout %q: want a positive duration such as 500ms, 2s or 1m", c.String("timeout"))
		}
		l.Timeout = d
	}
	if c.IsSet("memory") {
		if l.Memory, err = units.ParseSizeWithUnit(c.String("memory")); err != nil || l.Memory == 0 {
			why := "want a positive size"
			if err != nil {
				why = err.Error() + ": want a size"
			}
			return l, usageErr("--memory %q: %s such as 64MiB or 1GiB", c.String("memory"), why)
		}
		if l.Memory > wasmpy.MaxMemory {
			return l, usageErr("--memory %q: at most 4GiB (the wasm32 address space)", c.String("memory"))
		}
	}
	if c.IsSet("output-limit") {
		out, err := units.ParseSizeWithUnit(c.String("output-limit"))
		if err != nil || out > 1<<30 {
			return l, usageErr("--output-limit %q: want a size up to 1GiB such as 64KiB, or 0 for no limit", c.String("output-limit"))
		}
		l.Output = int(out)
		if out == 0 {
			l.Output = wasmpy.NoOutputLimit
		}
	}
	if c.IsSet("fuel") {
		if l.Fuel, err = strconv.ParseUint(strings.TrimSpace(c.String("fuel")), 10, 64); err != nil || l.Fuel > wasmpy.MaxFuel {
			return l, usageErr("--fuel %q: want a whole number of fuel units up to %d (0: the tier's; --tier trusted is unmetered)", c.String("fuel"), uint64(wasmpy.MaxFuel))
		}
	}
	return l, nil
}

// newSandbox opens a sandbox with the interpreter and cache flags.
func newSandbox(c *cli.Context, cfg wasmpy.Config) (*wasmpy.Sandbox, error) {
	if err := checkEngine(c); err != nil {
		return nil, err
	}
	sb, err := wasmpy.New(c.Context, withInterpreter(c, cfg))
	if err != nil {
		return nil, pkgErr(err) // a refused package set is the caller's input
	}
	return sb, nil
}

// checkEngine refuses an --engine (or WASMPY_ENGINE) this binary cannot
// run, as a usage error: one line, exit status 2.
func checkEngine(c *cli.Context) error {
	if err := wasmpy.CheckEngine(c.String("engine")); err != nil {
		return usageErr("--engine: %s", strings.TrimPrefix(err.Error(), "wasmpy: "))
	}
	return nil
}

// withInterpreter is cfg with the interpreter and cache flags.
func withInterpreter(c *cli.Context, cfg wasmpy.Config) wasmpy.Config {
	cfg.Interpreter, cfg.CacheDir, cfg.Engine = c.String("interpreter"), c.String("cache-dir"), cliEngine(c)
	return cfg
}

// cliEngine is the engine the CLI's commands run: the one --engine (or
// WASMPY_ENGINE) names, else defaultEngine for the interpreter asked for.
func cliEngine(c *cli.Context) string {
	if name := c.String("engine"); name != "" {
		return name
	}
	return defaultEngine(c.String("interpreter"), c.String("cache-dir"))
}

// defaultEngine is the CLI's engine when none is named: wasmtime where this
// binary has it (faster on CPU and to start: see the README's "Engines"),
// for the core build it runs (core, sci, or the best installed when
// that is one); wazero for the npm build or a python.wasm of the caller's,
// which wasmtime does not run, and in a binary without wasmtime. The
// library's default (Config.Engine "") stays wazero, the pure-Go one.
func defaultEngine(interpreter, cacheDir string) string {
	if !slices.Contains(wasmpy.Engines(), "wasmtime") {
		return "wazero"
	}
	switch interpreter {
	case assets.Core, assets.Wasmpy, assets.Sci:
		return "wasmtime"
	case "": // the best installed: the wasmpy build, when it is installed
		if cacheDir == "" {
			var err error
			if cacheDir, err = assets.DefaultCacheDir(); err != nil {
				return "wazero"
			}
		}
		if _, err := os.Stat(filepath.Join(assets.CoreDir(cacheDir), "manifest.json")); err == nil {
			return "wasmtime"
		}
	}
	return "wazero"
}

// reparse lets flags follow the positional arguments, as in
// `wasmpy net build net.yaml --out DIR` or `wasmpy gen "a task" --json`:
// urfave/cli v2 stops parsing flags at the first positional argument. It
// returns a context with those flags parsed too; "--" still ends the flags.
func reparse(c *cli.Context) (*cli.Context, error) {
	rest := c.Args().Slice()
	if !slices.ContainsFunc(rest, func(a string) bool { return len(a) > 1 && a[0] == '-' }) {
		return c, nil
	}
	set := flag.NewFlagSet(c.Command.Name, flag.ContinueOnError)
	set.SetOutput(io.Discard)
	for _, f := range append([]cli.Flag{cli.HelpFlag}, c.Command.Flags...) {
		if set.Lookup(f.Names()[0]) == nil {
			if err := f.Apply(set); err != nil {
				return nil, err
			}
		}
	}
	for _, f := range c.Command.Flags { // the flags before the first positional
		name := f.Names()[0]
		if !c.IsSet(name) {
			continue
		}
		values := []string{fmt.Sprint(c.Value(name))}
		if _, ok := f.(*cli.StringSliceFlag); ok {
			values = c.StringSlice(name) // repeatable: each value again
		}
		for _, v := range values {
			if err := set.Set(name, v); err != nil {
				return nil, usageErr("%s --%s: %v", c.Command.Name, name, err)
			}
		}
	}
	var args []string
	for len(rest) > 0 {
		if err := set.Parse(rest); err != nil {
			return nil, usageErr("%s %v%s", c.Command.Name, err, flagHint(err, c.Command.Flags))
		}
		left := set.Args()
		if n := len(rest) - len(left); n > 0 && rest[n-1] == "--" {
			args = append(args, left...) // after "--", all positional
			break
		}
		if len(left) == 0 {
			break
		}
		args, rest = append(args, left[0]), left[1:]
	}
	if set.Lookup("help").Value.String() == "true" {
		return nil, cli.ShowSubcommandHelp(c)
	}
	if err := set.Parse(append([]string{"--"}, args...)); err != nil {
		return nil, err
	}
	nc := cli.NewContext(c.App, set, c.Lineage()[1])
	nc.Command, nc.Context = c.Command, c.Context
	return nc, nil
}
