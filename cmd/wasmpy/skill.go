package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/user"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/stores"
	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/skills"
)

// Flags shared by the skill, serve, history and stats commands.
var (
	skillsFlag = &cli.StringSliceFlag{Name: "skills", EnvVars: []string{"WASMPY_SKILLS"},
		Usage: "`DIR` of skills, one per subdirectory, or one skill's directory; repeatable (default: the built-in examples, and embed_text with --llm-base-url)"}
	dbFlag = &cli.StringFlag{Name: "db", EnvVars: []string{"WASMPY_DB"},
		Usage: "provenance database: a SQLite file `PATH` or a postgres://USER@HOST/DB URL (default: wasmpy/provenance.db under the user's data dir)"}
	jsonFlag = &cli.BoolFlag{Name: "json", Usage: "print JSON"}
)

// llmFlags are the capability flags that concern skills: ask_llm's
// endpoint, and the package sets their requires: name.
func llmFlags() []cli.Flag {
	var out []cli.Flag
	for _, f := range capabilityFlags() {
		if name := f.Names()[0]; strings.HasPrefix(name, "llm-") || name == "packages" || name == "preload" {
			out = append(out, f)
		}
	}
	return out
}

func skillCommand() *cli.Command {
	common := append([]cli.Flag{skillsFlag, interpreterFlag, engineFlag, cacheFlag}, llmFlags()...)
	return &cli.Command{
		Name:  "skill",
		Usage: "list, show, validate and run skills",
		Subcommands: []*cli.Command{
			{
				Name: "list", Usage: "list the skills that load",
				Flags:  append([]cli.Flag{jsonFlag}, common...),
				Action: skillList,
			},
			{
				Name: "show", Usage: "print a skill's description and schemas as JSON", ArgsUsage: "NAME",
				Flags:  common,
				Action: skillShow,
			},
			{
				Name: "validate", Usage: "check every skill in a directory; exit 1 if any is broken", ArgsUsage: "DIR",
				Flags:  append([]cli.Flag{jsonFlag, interpreterFlag, engineFlag, cacheFlag}, llmFlags()...),
				Action: skillValidate,
			},
			{
				Name: "run", Usage: "run a skill", ArgsUsage: "NAME",
				Description: "Prints the skill's output (JSON) on stdout; with --record, its provenance id on stderr;\n" +
					"--json prints {result, provenance} as the HTTP service does. Exit status: 0 on a\n" +
					"valid output, 1 when the handler failed or its output is invalid, 2 for arguments\n" +
					"the input schema refuses or a missing approval, 121-124 for the sandbox's limits.",
				Flags: append([]cli.Flag{
					&cli.StringFlag{Name: "args", Value: "{}", Usage: "the arguments: a JSON `OBJECT`, @FILE, or - for stdin"},
					&cli.BoolFlag{Name: "approve", Usage: "approve a skill that needs it (requires_approval or side_effect)"},
					&cli.StringFlag{Name: "actor-id", Usage: "who runs it, for provenance (default: $USER)", EnvVars: []string{"USER"}},
					&cli.StringFlag{Name: "actor-type", Value: "cli", Usage: "what kind of actor, for provenance"},
					jsonFlag, recordFlag, dbFlag,
					&cli.StringFlag{Name: "tier", Usage: "run in the trust tier `NAME`, stricter than the skill's own (default: its own, else trusted)"},
					tiersFlag(),
				}, common...),
				Action: skillRun,
			},
		},
	}
}

// newExecutor opens the sandbox skills run in, recording into st (may be
// nil), with the tiers of --tiers; lim are ceilings on the tiers' limits.
// --tier is the default tier of raw code (serve's /exec and sessions).
func newExecutor(c *cli.Context, st stores.Store, lim wasmpy.Limits, budgets ...runs.SessionBudgets) (*runs.Executor, error) {
	cfg, err := sandboxConfig(c)
	if err != nil {
		return nil, err
	}
	if err := checkEngine(c); err != nil {
		return nil, err
	}
	cfg.Interpreter, cfg.CacheDir, cfg.Limits, cfg.Engine = executorInterpreter(c), c.String("cache-dir"), lim, cliEngine(c)
	set, err := loadTiers(c)
	if err != nil {
		return nil, err
	}
	ecfg := runs.ExecutorConfig{Sandbox: cfg, Tiers: set, DefaultTier: c.String("tier")}
	for _, b := range budgets {
		ecfg.Budgets = b
	}
	if _, err := set.Lookup(ecfg.DefaultTier); ecfg.DefaultTier != "" && err != nil {
		return nil, usageErr("--tier: %s", strings.TrimPrefix(err.Error(), "tiers: "))
	}
	if st != nil {
		ecfg.Store, ecfg.Sessions = st, st
	}
	if c.Command.Name == "serve" {
		ecfg.CodeCache, _ = codeCacheDir(c) // POST /def's, the CLI's code cache (none if there is no cache dir)
	}
	ex, err := runs.NewExecutor(c.Context, ecfg)
	if err != nil {
		return nil, &exitError{code: exitWasmpy, msg: strings.TrimPrefix(console.OneLine(err), "wasmpy: ")}
	}
	return ex, nil
}

// loadSkills loads --skills (or the built-in examples).
func loadSkills(c *cli.Context, ex *runs.Executor, dirs []string) (*skills.Registry, error) {
	reg, err := startSkills(c.Context, c, ex, dirs, nil)
	if err != nil {
		return nil, err
	}
	if err := reg.Wait(c.Context); err != nil {
		return nil, &exitError{code: exitWasmpy, msg: strings.TrimPrefix(err.Error(), "skills: ")}
	}
	return reg, nil
}

// startSkills starts loading the --skills directories (or the built-in
// examples: embed_text too where an LLM endpoint is configured), and the
// skills registered in registered if it is set.
func startSkills(ctx context.Context, c *cli.Context, ex *runs.Executor, dirs []string, registered provenance.Skills) (*skills.Registry, error) {
	// --skill-check-timeout and --skill-sync are serve's; elsewhere they read
	// as 0, the default.
	opts := skills.LoadOptions{Checker: ex.Checker(), AllowExternalCalls: ex.AllowsExternalCalls(),
		SkillTimeout: c.Duration("skill-check-timeout"), Registered: registered, SyncInterval: c.Duration("skill-sync"),
		Tiers: ex.Tiers()}
	var srcs []skills.Dir
	for _, dir := range dirs {
		d, err := skills.HostDir(dir)
		if err != nil {
			return nil, usageErr("%s", strings.TrimPrefix(err.Error(), "skills: "))
		}
		srcs = append(srcs, d)
	}
	if len(srcs) == 0 {
		srcs = []skills.Dir{{FS: skills.Examples(), Root: "(built-in)"}}
		if ex.AllowsExternalCalls() {
			srcs = append(srcs, skills.Dir{FS: skills.LLMExamples(), Root: "(built-in)"})
		}
	}
	reg, err := skills.StartDirs(ctx, srcs, opts)
	switch {
	case errors.Is(err, skills.ErrRegistered):
		return nil, &exitError{code: exitWasmpy, msg: console.OneLine(err)}
	case err != nil:
		return nil, usageErr("%s", strings.TrimPrefix(err.Error(), "skills: "))
	}
	return reg, nil
}

func warnProblems(w io.Writer, reg *skills.Registry) {
	for _, p := range reg.Problems() {
		fmt.Fprintf(w, "wasmpy: skipped a broken skill: %s\n", console.Clean(p.String()))
	}
	if len(reg.Skills()) == 0 && len(reg.Problems()) == 0 {
		fmt.Fprintf(w, "wasmpy: warning: no skill found: --skills wants a skill's directory (with %s) or the directory that holds them\n", skills.ManifestFile)
	}
}

func skillList(c *cli.Context) error {
	ex, err := newExecutor(c, nil, wasmpy.Limits{})
	if err != nil {
		return err
	}
	defer ex.Close(c.Context)
	reg, err := loadSkills(c, ex, c.StringSlice("skills"))
	if err != nil {
		return err
	}
	warnProblems(c.App.ErrWriter, reg)
	if c.Bool("json") {
		infos := []skills.Info{}
		for _, s := range reg.Skills() {
			infos = append(infos, ex.Describe(s))
		}
		return console.WriteIndented(c.App.Writer, infos)
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tFLAGS\tAPPROVAL\tDESCRIPTION")
	for _, s := range reg.Skills() {
		approval := "-"
		if s.NeedsApproval() {
			approval = "required"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", console.Clean(s.Name), console.Clean(s.Version), console.Clean(strings.Join(s.SafetyFlags, ",")), approval, console.Clean(firstLine(s.Description, 60)))
	}
	return tw.Flush()
}

func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// oneArg returns the command's one positional argument, and the context
// with the flags that may follow it (skill run NAME --args ...) parsed.
func oneArg(c *cli.Context, what string) (*cli.Context, string, error) {
	c, err := reparse(c)
	if err != nil {
		return nil, "", err
	}
	args := c.Args().Slice()
	switch len(args) {
	case 0:
		return nil, "", usageErr("%s: missing %s", c.Command.FullName(), what)
	case 1:
		return c, args[0], nil
	}
	return nil, "", usageErr("%s: want one %s, got %d arguments", c.Command.FullName(), what, len(args))
}

func skillShow(c *cli.Context) error {
	c, name, err := oneArg(c, "NAME")
	if err != nil {
		return err
	}
	ex, err := newExecutor(c, nil, wasmpy.Limits{})
	if err != nil {
		return err
	}
	defer ex.Close(c.Context)
	s, err := findSkill(c, ex, name)
	if err != nil {
		return err
	}
	return console.WriteIndented(c.App.Writer, struct {
		skills.Info
		Dir    string          `json:"dir"`
		Input  json.RawMessage `json:"input_schema"`
		Output json.RawMessage `json:"output_schema"`
	}{ex.Describe(s), s.Dir, s.InputSchema, s.OutputSchema})
}

// findSkill loads the --skills registry and returns the skill called name.
func findSkill(c *cli.Context, ex *runs.Executor, name string) (*skills.Skill, error) {
	reg, err := loadSkills(c, ex, c.StringSlice("skills"))
	if err != nil {
		return nil, err
	}
	s, ok := reg.Get(name)
	if !ok {
		return nil, missingSkill(reg, name)
	}
	return s, nil
}

func missingSkill(reg *skills.Registry, name string) error {
	for _, p := range reg.Problems() {
		if p.Skill == name {
			return usageErr("skill %q is broken: %s", name, p)
		}
	}
	var names []string
	for _, s := range reg.Skills() {
		names = append(names, s.Name)
	}
	return usageErr("no skill %q (have: %s)", name, strings.Join(names, ", "))
}

func skillValidate(c *cli.Context) error {
	c, dir, err := oneArg(c, "DIR")
	if err != nil {
		return err
	}
	ex, err := newExecutor(c, nil, wasmpy.Limits{})
	if err != nil {
		return err
	}
	defer ex.Close(c.Context)
	reg, err := loadSkills(c, ex, []string{dir})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		ok := []skills.Info{}
		for _, s := range reg.Skills() {
			ok = append(ok, ex.Describe(s))
		}
		probs := reg.Problems()
		if probs == nil {
			probs = []skills.Problem{}
		}
		if err := console.WriteIndented(c.App.Writer, map[string]any{"skills": ok, "problems": probs}); err != nil {
			return err
		}
	} else {
		for _, s := range reg.Skills() {
			fmt.Fprintf(c.App.Writer, "ok      %s %s (%s)\n", console.Clean(s.Name), console.Clean(s.Version), console.Clean(s.Dir))
		}
		for _, p := range reg.Problems() {
			fmt.Fprintf(c.App.Writer, "broken  %s\n", console.Clean(p.String()))
		}
	}
	if n := len(reg.Problems()); n > 0 {
		return &exitError{code: 1, msg: fmt.Sprintf("%d problem(s) in %s", n, dir)}
	}
	if len(reg.Skills()) == 0 {
		return &exitError{code: 1, msg: fmt.Sprintf("no skill in %s: give a skill's directory (with %s) or the directory that holds them", dir, skills.ManifestFile)}
	}
	return nil
}

func skillRun(c *cli.Context) error {
	c, name, err := oneArg(c, "NAME")
	if err != nil {
		return err
	}
	args, err := readArgs(c)
	if err != nil {
		return err
	}
	var st stores.Store
	if c.Bool("record") {
		if st, err = openStore(c); err != nil {
			return err
		}
		defer st.Close()
	}
	ex, err := newExecutor(c, st, wasmpy.Limits{})
	if err != nil {
		return err
	}
	defer ex.Close(c.Context)
	s, err := findSkill(c, ex, name)
	if err != nil {
		return err
	}
	actor := c.String("actor-id")
	if actor == "" {
		if u, err := user.Current(); err == nil {
			actor = u.Username
		}
	}
	x, err := ex.Execute(c.Context, s, runs.Request{Args: args, ActorID: actor, ActorType: c.String("actor-type"), Approved: c.Bool("approve"),
		Tier: c.String("tier")})
	var se *skills.Error
	switch {
	case errors.As(err, &se) && se.Code == runs.CodeApprovalRequired:
		return usageErr("%s: %s: pass --approve", name, se.Message)
	case errors.As(err, &se):
		return usageErr("%s: %s", name, se.Message)
	case err != nil:
		return &exitError{code: exitWasmpy, msg: console.OneLine(err)}
	}
	w, ew := c.App.Writer, c.App.ErrWriter
	if c.Bool("json") {
		if err := console.WriteIndented(w, x); err != nil {
			return err
		}
	} else {
		// The handler's prints go to stderr: stdout is its output, as JSON.
		io.WriteString(ew, console.CleanText(x.Result.Stdout))
		io.WriteString(ew, console.CleanText(x.Result.Stderr))
		if x.Error == nil {
			var out any
			json.Unmarshal(x.Result.Output, &out)
			if err := console.WriteIndented(w, out); err != nil {
				return err
			}
		}
		if st != nil {
			fmt.Fprintf(ew, "provenance: %s\n", x.Record.ExecutionID)
		}
	}
	if x.Error == nil {
		return nil
	}
	code := x.Result.ExitCode
	if code == 0 {
		code = 1
	}
	if c.Bool("json") {
		return exitStatus(code)
	}
	return &exitError{code: code, msg: fmt.Sprintf("%s: %s: %s", name, x.Error.Code, x.Error.Message)}
}

// readArgs reads --args: JSON, @FILE or - (stdin); it must be an object.
func readArgs(c *cli.Context) (json.RawMessage, error) {
	v := c.String("args")
	var b []byte
	switch {
	case v == "-":
		var err error
		if b, err = readAll(c.App.Reader, "stdin"); err != nil {
			return nil, err
		}
	case strings.HasPrefix(v, "@"):
		var err error
		if b, err = readFile(v[1:]); err != nil {
			return nil, err
		}
	default:
		b = []byte(v)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
		return nil, usageErr("--args: want a JSON object, e.g. '{\"text\": \"...\"}'")
	}
	return b, nil
}

func openStore(c *cli.Context) (stores.Store, error) {
	st, err := stores.Open(c.Context, c.String("db"))
	if errors.Is(err, stores.ErrUnsupported) {
		return nil, usageErr("--db: %s", strings.TrimPrefix(err.Error(), "provenance: "))
	}
	if err != nil {
		return nil, &exitError{code: exitWasmpy, msg: strings.TrimPrefix(console.OneLine(err), "wasmpy: ")}
	}
	return st, nil
}
