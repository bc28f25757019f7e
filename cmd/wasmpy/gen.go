package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/assets"
	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
	"github.com/wasmpy/wasmpy/codegen"
	"github.com/wasmpy/wasmpy/llm"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/tiers"
)

func genCommand() *cli.Command {
	return &cli.Command{
		Name:      "gen",
		Usage:     "ask an LLM for Python that does a task, check it, and run it in the sandbox",
		ArgsUsage: "TASK... | -",
		Description: "Asks the LLM (--llm-base-url) for a program doing TASK (- reads it from stdin), checks it with\n" +
			"Python's ast inside the sandbox (syntax, imports outside --allow-import, forbidden builtins,\n" +
			"dunder tricks, a missing submit_result), runs it, and on failure asks again with the error,\n" +
			"up to --attempts times. Code that worked is cached (--no-cache to ask anyway).\n" +
			"Prints the program's output, then the result it submitted as JSON; --json prints one object:\n" +
			"exec --json's fields plus ok, code, cached and attempts; when the generation failed, ok is false\n" +
			"and error is {kind, message}: kind is the last attempt's outcome when every attempt failed\n" +
			"(invalid, exception, timeout...), llm when the LLM could not be asked. Exits 1 when no attempt\n" +
			"succeeded.\n" +
			"While it waits, a progress line goes to stderr on a terminal (--progress: always).\n" +
			"The code runs in the sandbox trust tier unless --tier says otherwise (`wasmpy tiers`): its\n" +
			"limits, capabilities (submit_result only) and imports, and strict validation. --workspace DIR\n" +
			"also grants reading DIR (read_file, list_files, search_files), --out DIR writing files\n" +
			"(write_file). The prompt names exactly the capabilities the code is granted.",
		Flags: append(append([]cli.Flag{
			&cli.BoolFlag{Name: "no-result", Usage: "the task needs no submit_result (it only prints or writes files)"},
		}, codegenFlags()...), append(append(limitFlags(), tierFlags()...), capabilityFlags()...)...),
		Action: genAction,
	}
}

// codegenFlags are the flags gen and def share.
func codegenFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "json", Usage: "print one JSON object: the run's result, the code and every attempt"},
		&cli.BoolFlag{Name: "dry-run", Usage: "print the validated code without running it"},
		&cli.BoolFlag{Name: "show-code", Usage: "print the code before its output (the last attempt's, when all failed)"},
		&cli.BoolFlag{Name: "progress", Usage: "show what it waits for on stderr, even when stderr is not a terminal"},
		&cli.BoolFlag{Name: "no-cache", Usage: "ask the LLM even when the code cache has an answer"},
		&cli.StringFlag{Name: "code-cache", EnvVars: []string{"WASMPY_CODE_CACHE"}, Usage: "`DIR` of the code cache (default: codegen/ in the cache dir)"},
		&cli.IntFlag{Name: "attempts", Value: codegen.DefaultAttempts, Usage: "LLM replies to try before giving up"},
		&cli.StringFlag{Name: "template", Usage: "prompt template `FILE` overriding the embedded one ({{define \"system\"}}... see --print-template)"},
		&cli.BoolFlag{Name: "print-template", Usage: "print the embedded prompt template and exit"},
		&cli.IntFlag{Name: "llm-retries", Value: codegen.DefaultLLMRetries, Usage: "retries of a failed LLM request (429, 5xx, timeouts)"},
		&cli.StringFlag{Name: "llm-backoff", Value: codegen.DefaultBackoff.String(), Usage: "delay before the first LLM retry, doubled each time, with jitter"},
		recordFlag, dbFlag, interpreterFlag, engineFlag, cacheFlag,
	}
}

// codegenLimits are the limits the generated code's runs get under tier,
// for their record; newGenerator has checked the flags.
func codegenLimits(c *cli.Context, tier *tiers.Tier) wasmpy.Limits {
	lim, _ := limits(c)
	return lim.Or(tier.Limits).Or(wasmpy.DefaultLimits())
}

func genAction(c *cli.Context) error {
	c, err := reparse(c)
	if err != nil || c == nil {
		return err
	}
	if c.Bool("print-template") {
		_, err := io.WriteString(c.App.Writer, codegen.TaskTemplate())
		return err
	}
	task, err := genTask(c)
	if err != nil {
		return err
	}
	g, sb, tier, err := newGenerator(c, "task")
	if err != nil {
		return err
	}
	defer sb.Close(c.Context)
	rec, err := startRecording(c, sb, provenance.KindGen, tier.Name, codegenLimits(c, tier), "", map[string]any{"task": task})
	if err != nil {
		return err
	}
	defer rec.close()
	rep, err := g.Task(c.Context, task)
	if rerr := rec.finishCodegen(c, rep, nil, err); rerr != nil {
		return rerr
	}
	if done, err := reportCodegen(c, tier.Name, rep, nil, err); done || err != nil {
		return err
	}
	w := c.App.Writer
	io.WriteString(w, rep.Result.Stdout)
	io.WriteString(c.App.ErrWriter, rep.Result.Stderr)
	if submitted := rep.Result.Output; len(submitted) > 0 && string(submitted) != "null" {
		if c.Bool("show-code") {
			io.WriteString(w, "# --- result ---\n")
		}
		fmt.Fprintf(w, "%s\n", submitted)
	}
	return nil
}

// reportCodegen prints what gen and def share (tier is the one they ran under): --json's object, the failed
// attempts on stderr, the code (--show-code, --dry-run), the files (--out).
// done says nothing is left to print; the error is the generation's.
func reportCodegen(c *cli.Context, tier string, rep *codegen.Report, fr *codegen.FunctionReport, err error) (done bool, _ error) {
	if fr != nil {
		rep = &fr.Report
	}
	if console.IsTerminal(c.App.ErrWriter) {
		io.WriteString(c.App.ErrWriter, "\r\x1b[K") // erase the progress line
	}
	if c.Bool("json") {
		out := codegenJSON{OK: err == nil, Tier: tier, Code: "", Attempts: []codegen.Attempt{}}
		if rep != nil {
			out.Result, out.Code, out.Cached, out.Attempts = rep.Result, rep.Code, rep.Cached, rep.Attempts
		}
		if fr != nil {
			out.Function, out.TestCode, out.Tests, out.Quality = fr.Name, fr.TestCode, fr.Tests, fr.Quality
			if fr.Result != nil {
				out.Value = fr.Value
			}
		}
		if err != nil {
			out.Error = codegenFailure(err, rep)
		} else if rep.Result != nil {
			out.Error = rep.Result.Error
		}
		if perr := printJSON(c.App.Writer, out); perr != nil {
			return true, perr
		}
	} else if rep != nil {
		noteAttempts(c, rep, err == nil)
		if err != nil && c.Bool("show-code") && len(rep.Attempts) > 0 {
			showCode(c.App.Writer, rep)
		}
	}
	if err != nil {
		return true, codegenErr(c, err)
	}
	if c.Bool("dry-run") {
		if !c.Bool("json") {
			io.WriteString(c.App.Writer, rep.Code)
		}
		return true, nil
	}
	if err := writeOut(c, rep.Result.Files, rep.Result.File); err != nil {
		return true, err
	}
	if c.Bool("json") {
		return true, nil
	}
	if c.Bool("show-code") && fr == nil {
		showCode(c.App.Writer, rep)
		io.WriteString(c.App.Writer, "# --- output ---\n")
	}
	return false, nil
}

// genTask reads the task: the arguments, or stdin for "-".
func genTask(c *cli.Context) (string, error) {
	args := c.Args().Slice()
	if len(args) == 1 && args[0] == "-" {
		b, err := readAll(c.App.Reader, "stdin")
		if err != nil {
			return "", err
		}
		args = []string{string(b)}
	}
	task := strings.TrimSpace(strings.Join(args, " "))
	if task == "" {
		return "", usageErr("gen: no task: give it as arguments, or - to read it from stdin")
	}
	return task, nil
}

// newGenerator opens a sandbox and a Generator configured by the flags,
// under the tier it returns. kind is "task" or "function", for --template.
func newGenerator(c *cli.Context, kind string) (*codegen.Generator, *wasmpy.Sandbox, *tiers.Tier, error) {
	_, tier, err := chooseTier(c, (*tiers.Set).Strictest)
	if err != nil {
		return nil, nil, nil, err
	}
	// An explicit --workspace is the user's grant of reading it, and --out
	// of writing files, whatever the tier grants otherwise.
	policy := *tier
	policy.Capabilities = slices.Clone(tier.Capabilities)
	for _, need := range []struct {
		flag string
		cps  []wasmpy.Capability
	}{{"workspace", []wasmpy.Capability{wasmpy.ReadFile, wasmpy.ListFiles, wasmpy.SearchFiles}}, {"out", []wasmpy.Capability{wasmpy.WriteFile}}} {
		if c.IsSet(need.flag) {
			for _, cp := range need.cps {
				if !slices.Contains(policy.Capabilities, cp) {
					policy.Capabilities = append(policy.Capabilities, cp)
				}
			}
		}
	}
	lim, err := limits(c)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg, err := sandboxConfig(c)
	if err != nil {
		return nil, nil, nil, err
	}
	if c.Int("attempts") < 1 {
		return nil, nil, nil, usageErr("--attempts must be at least 1")
	}
	backoff, err := time.ParseDuration(c.String("llm-backoff"))
	if err != nil || backoff <= 0 {
		return nil, nil, nil, usageErr("--llm-backoff %q: want a positive duration such as 500ms or 2s", c.String("llm-backoff"))
	}
	opts := codegen.Options{
		Model:          cfg.LLM.Model,
		Progress:       progressLine(c),
		Attempts:       c.Int("attempts"),
		AllowImports:   cfg.AllowImports, // nil: the tier's, else the default allowlist
		Validation:     tier.Validation,
		ResultOptional: c.Bool("no-result"),
		DryRun:         c.Bool("dry-run"),
		Limits:         lim,
		LLMRetries:     c.Int("llm-retries"),
		Backoff:        backoff,
	}
	if opts.LLMRetries == 0 {
		opts.LLMRetries = -1 // --llm-retries 0 means none
	}
	// The allowlists bind at run time too (--allow-import's and the
	// tier's); the validator's and the def harness's own imports are added
	// to each.
	withHelpers := func(m []string) []string {
		return slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(m), codegen.HelperImports()...))))
	}
	if opts.AllowImports == nil {
		opts.AllowImports = tier.AllowImports
	} else {
		cfg.AllowImports = withHelpers(opts.AllowImports)
	}
	if policy.AllowImports != nil {
		policy.AllowImports = withHelpers(policy.AllowImports)
	}
	opts.Policy = operatorPolicy(policy)
	if kind == "function" {
		opts.Tests, opts.Style = c.Bool("tests"), c.String("style")
		if opts.MinQuality, err = parseQuality(c.String("min-quality")); err != nil {
			return nil, nil, nil, err
		}
		if path := c.String("code-template"); path != "" {
			b, err := readFile(path)
			if err != nil {
				return nil, nil, nil, err
			}
			opts.CodeTemplate = string(b)
		}
	}
	if path := c.String("template"); path != "" {
		b, err := readFile(path)
		if err != nil {
			return nil, nil, nil, err
		}
		if kind == "task" {
			opts.TaskTemplate = string(b)
		} else {
			opts.FunctionTemplate = string(b)
		}
	}
	if !c.Bool("no-cache") {
		if opts.CacheDir, err = codeCacheDir(c); err != nil {
			return nil, nil, nil, err
		}
	}
	if cfg.LLM.BaseURL == "" {
		return nil, nil, nil, usageErr("%s: no LLM configured: set --llm-base-url or WASMPY_LLM_BASE_URL", c.Command.Name)
	}
	sb, err := newSandbox(c, cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	g, err := codegen.New(sb, llm.New(cfg.LLM), opts)
	if err != nil {
		sb.Close(c.Context)
		if errors.Is(err, codegen.ErrNoModel) {
			return nil, nil, nil, usageErr("%s: no model: set --llm-model, WASMPY_LLM_MODEL or OPENAI_MODEL", c.Command.Name)
		}
		return nil, nil, nil, usageErr("%s", strings.TrimPrefix(err.Error(), "codegen: "))
	}
	return g, sb, tier, nil
}

func codeCacheDir(c *cli.Context) (string, error) {
	if dir := c.String("code-cache"); dir != "" {
		return dir, nil
	}
	dir := c.String("cache-dir")
	if dir == "" {
		var err error
		if dir, err = assets.DefaultCacheDir(); err != nil {
			return "", &exitError{code: exitWasmpy, msg: console.OneLine(err)}
		}
	}
	return filepath.Join(dir, "codegen"), nil
}

// codegenJSON is what gen --json and def --json print: exec --json's fields
// (absent when nothing ran), ok, then the code and the attempts. error is
// the run's when the generation succeeded, else the generation's failure.
type codegenJSON struct {
	*wasmpy.Result
	OK       bool                 `json:"ok"`
	Tier     string               `json:"tier"` // also when nothing ran
	Error    any                  `json:"error"`
	Function string               `json:"function,omitempty"`
	Value    json.RawMessage      `json:"value,omitempty"`
	Code     string               `json:"code"`
	TestCode string               `json:"test_code,omitempty"`
	Tests    []codegen.TestResult `json:"tests,omitempty"`
	Quality  *codegen.Quality     `json:"quality,omitempty"`
	Cached   bool                 `json:"cached"`
	Attempts []codegen.Attempt    `json:"attempts"`
}

// genFailure is the error of a failed generation under --json.
type genFailure struct {
	// Kind is the last attempt's outcome when every attempt failed (invalid,
	// exception, timeout, tests_failed, low_quality...), llm when the LLM
	// could not be asked, wasmpy when wasmpy itself failed.
	Kind    string `json:"kind"`
	Message string `json:"message"` // the line stderr shows
}

func codegenFailure(err error, rep *codegen.Report) genFailure {
	return genFailure{Kind: runs.CodegenFailure(err, rep), Message: strings.TrimPrefix(oneLineText(err.Error()), "codegen: ")}
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// noteAttempts tells stderr about the attempts that failed.
func noteAttempts(c *cli.Context, rep *codegen.Report, ok bool) {
	for i, a := range rep.Attempts {
		if ok && i == len(rep.Attempts)-1 {
			break
		}
		fmt.Fprintf(c.App.ErrWriter, "wasmpy: %s: attempt %d (%s): %s\n", c.Command.Name, i+1, a.Source, oneLineText(a.Summary()))
	}
}

func showCode(w io.Writer, rep *codegen.Report) {
	last := rep.Attempts[len(rep.Attempts)-1]
	fmt.Fprintf(w, "# --- code (attempt %d, from the %s) ---\n%s", len(rep.Attempts), map[string]string{"llm": "LLM", "cache": "cache"}[last.Source], rep.Code)
}

func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }

// codegenErr maps a generation's error to an exit status and a line.
func codegenErr(c *cli.Context, err error) error {
	name := c.Command.Name
	msg := strings.TrimPrefix(oneLineText(err.Error()), "codegen: ")
	switch {
	case errors.Is(err, llm.ErrNotConfigured):
		return usageErr("%s: no LLM configured: set --llm-base-url or WASMPY_LLM_BASE_URL", name)
	case errors.Is(err, codegen.ErrBadSignature), errors.Is(err, codegen.ErrBadArguments):
		return usageErr("%s: %s", name, msg)
	case errors.Is(err, codegen.ErrGaveUp):
		return &exitError{code: 1, msg: name + ": " + msg}
	}
	// The LLM unreachable or refusing, the validator failing: not the code's fault.
	return &exitError{code: exitWasmpy, msg: name + ": " + msg}
}
