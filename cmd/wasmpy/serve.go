package main

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy/assets"
	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
	"github.com/wasmpy/wasmpy/internal/hostfile"
	"github.com/wasmpy/wasmpy/internal/units"
	"github.com/wasmpy/wasmpy/mcpserver"
	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/service"
	"github.com/wasmpy/wasmpy/skills"
)

// maxTokensFile bounds --tokens-file.
const maxTokensFile = 1 << 20

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve skills over HTTP",
		Description: "Serves the skills in --skills DIR (default: the built-in examples) on --addr, recording\n" +
			"the provenance of every execution. Bearer tokens come from the store (`wasmpy token\n" +
			"create`, with a role: runner or admin), from --tokens-file (one per line) and from\n" +
			"$WASMPY_TOKENS (comma-separated), the last two as runners; with none, no token is\n" +
			"asked for, and no skill can be registered over the API.\n" +
			"Every run has a trust tier (--tiers, `wasmpy tiers`): a skill its own, POST /exec and sessions\n" +
			"the request's \"tier\" or --tier; a stored token's max_tier caps what its requests may ask for.\n" +
			"--timeout, --memory and --fuel are ceilings on the tiers' limits (POST /exec is off unless\n" +
			"--enable-exec). SIGINT or SIGTERM shuts down\n" +
			"gracefully: /health/ready fails for --drain-delay, then runs in progress finish (up to\n" +
			"--shutdown-timeout). --db postgres://... shares the store between replicas.\n" +
			"Budgets bound what sessions and MCP hold, in all and per token (--session-memory,\n" +
			"--mcp-sessions-per-token, ...; \"none\" for no bound): past one, the request gets 429\n" +
			"budget_exceeded. Every flag can also be set from the environment: --max-body from\n" +
			"$WASMPY_MAX_BODY, and so on.",
		Flags: withEnv(append(append([]cli.Flag{
			skillsFlag, dbFlag,
			&cli.StringFlag{Name: "addr", Value: "127.0.0.1:8002", Usage: "`HOST:PORT` to listen on"},
			&cli.StringFlag{Name: "tokens-file", EnvVars: []string{"WASMPY_TOKENS_FILE"}, Usage: "`FILE` of bearer tokens, one per line (# comments)"},
			&cli.StringFlag{Name: "max-body", Value: "1MiB", Usage: "largest request body"},
			&cli.DurationFlag{Name: "shutdown-timeout", Value: 30 * time.Second, Usage: "how long runs in progress may take to finish on shutdown"},
			&cli.DurationFlag{Name: "drain-delay", EnvVars: []string{"WASMPY_DRAIN_DELAY"},
				Usage: "on shutdown, how long to keep answering with /health/ready failing before closing the listener, so a load balancer stops sending traffic first"},
			&cli.DurationFlag{Name: "skill-sync", Value: 5 * time.Second, Usage: "how often to pick up the skills registered, disabled or deleted on other replicas sharing --db (0: at start only; a run always asks the store whether its version is still enabled)"},
			&cli.DurationFlag{Name: "skill-check-timeout", Value: skills.DefaultSkillTimeout, Usage: "bound on checking one skill's handler at load; a skill whose check takes longer is skipped"},
			&cli.BoolFlag{Name: "enable-exec", Usage: "turn on POST /exec (and MCP's run_python and workspace tools), which run any code they are sent"},
			&cli.BoolFlag{Name: "mcp", Usage: "serve MCP (streamable HTTP) at /mcp, behind the same tokens"},
			&cli.StringFlag{Name: "log-format", Value: "json", Usage: "json or text"},
			&cli.StringFlag{Name: "tier", Usage: "the trust tier `NAME` of POST /exec and sessions when a request names none (default: testing)"},
			tiersFlag(), interpreterFlag, engineFlag, cacheFlag,
		}, append(admissionFlags(), budgetFlags()...)...), append(limitFlags(), llmFlags()...)...)),
		Action: serveAction,
	}
}

func serveAction(c *cli.Context) error {
	if err := checkEngine(c); err != nil {
		return err
	}
	if c.NArg() > 0 {
		return usageErr("serve: unexpected argument %q", c.Args().First())
	}
	var log *slog.Logger
	switch f := c.String("log-format"); f {
	case "json":
		log = slog.New(slog.NewJSONHandler(c.App.ErrWriter, nil))
	case "text":
		log = slog.New(slog.NewTextHandler(c.App.ErrWriter, nil))
	default:
		return usageErr("--log-format %q: want json or text", f)
	}
	maxBody, err := units.ParseSizeWithUnit(c.String("max-body"))
	if err != nil || maxBody == 0 || maxBody > 1<<30 {
		return usageErr("--max-body %q: want a size from 1B to 1GiB, such as 1MiB", c.String("max-body"))
	}
	lim, err := limits(c)
	if err != nil {
		return err
	}
	if c.Duration("shutdown-timeout") <= 0 {
		return usageErr("--shutdown-timeout must be positive")
	}
	if c.Duration("drain-delay") < 0 {
		return usageErr("--drain-delay must not be negative")
	}
	if c.Duration("skill-sync") < 0 {
		return usageErr("--skill-sync must not be negative")
	}
	adm, err := admission(c)
	if err != nil {
		return err
	}
	tokens, err := readTokens(c.String("tokens-file"))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.String("addr"))
	if err != nil {
		return usageErr("--addr: %v", err)
	}
	defer ln.Close()

	st, err := openStore(c)
	if err != nil {
		return err
	}
	defer st.Close()
	if n := st.Interrupted(); n > 0 {
		log.Warn("marked runs left by a dead process as interrupted", "count", n, "db", st.Where())
	}
	sb, mb, err := budgets(c)
	if err != nil {
		return err
	}
	ex, err := newExecutor(c, st, lim, sb)
	if err != nil {
		return err
	}
	defer ex.Close(c.Context)
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	reg, err := startSkills(ctx, c, ex, c.StringSlice("skills"), st)
	if err != nil {
		return err
	}
	go func() { // the service answers while the skills load
		start := time.Now()
		if reg.Wait(ctx) != nil {
			return
		}
		for _, p := range reg.Problems() {
			log.Warn("skipped a broken skill", "path", p.Path, "skill", p.Skill, "reason", p.Reason)
		}
		log.Info("skills loaded", "skills", len(reg.Skills()), "broken", len(reg.Problems()), "seconds", time.Since(start).Seconds())
		if len(reg.Skills()) == 0 {
			log.Warn("no skill loaded: /health says degraded; --skills names the directory that holds skill directories", "skills", strings.Join(c.StringSlice("skills"), ","))
		}
	}()
	if ex.Interpreter().Kind != assets.Core {
		log.Warn("skills need the core interpreter build for submit_result; with this one every run fails (make interpreter)",
			"interpreter", ex.Interpreter().Kind)
	}
	version, _ := buildVersion()
	scfg := service.Config{Version: version,
		Registry: reg, Executor: ex, Admission: adm, Tokens: tokens, TokenStore: st, MaxBodyBytes: int64(maxBody),
		EnableExec: c.Bool("enable-exec"), ExecLimits: lim, Logger: log, Store: st, DrainDelay: c.Duration("drain-delay"),
	}
	if c.Bool("mcp") {
		srv, err := mcpserver.New(ctx, mcpserver.Config{Executor: ex, Registry: reg, Admission: adm, ExecLimits: lim,
			SkillsOnly: !c.Bool("enable-exec"), Version: wasmpyVersion(), Logger: log, Budgets: mb})
		if err != nil {
			return &exitError{code: exitWasmpy, msg: console.OneLine(err)}
		}
		defer srv.Close()
		scfg.MCP = srv.Handler()
	}
	svc, err := service.New(scfg)
	if err != nil {
		return &exitError{code: exitWasmpy, msg: console.OneLine(err)}
	}
	if !svc.AsksForTokens() {
		log.Warn("NO AUTHENTICATION: this service asks for no token: anyone who reaches "+ln.Addr().String()+
			" runs its skills (and code, with --enable-exec) and reads its records. It decides at start-up: a token made "+
			"later with `wasmpy token create` takes effect only once the service restarts. Give tokens with --tokens-file, "+
			"$WASMPY_TOKENS or `wasmpy token create` before starting it.", "addr", ln.Addr().String(), "db", st.Where())
	}
	log.Info("listening", "addr", ln.Addr().String(), "loading_skills", len(reg.Pending()),
		"db", st.Where(), "auth", svc.AsksForTokens(), "exec", c.Bool("enable-exec"), "mcp", c.Bool("mcp"), "interpreter", ex.Interpreter().Kind)
	if err := svc.Serve(ctx, ln, c.Duration("shutdown-timeout")); err != nil {
		return &exitError{code: exitWasmpy, msg: fmt.Sprintf("serve: %v", err)}
	}
	return nil
}

// admissionFlags bound the runs a server starts, whatever front end asks.
func admissionFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "max-concurrent", Usage: "runs at once (0: the number of CPUs)"},
		&cli.IntFlag{Name: "max-queue", Usage: "requests waiting for a run slot before they are refused as busy (0: 4 × max-concurrent, -1: none)"},
		&cli.DurationFlag{Name: "request-timeout", Value: runs.DefaultRequestTimeout, Usage: "bound on a run request, queueing included"},
	}
}

func admission(c *cli.Context) (*runs.Admission, error) {
	if c.Duration("request-timeout") <= 0 {
		return nil, usageErr("--request-timeout must be positive")
	}
	if n := c.Int("max-concurrent"); n < 0 || n > runs.MaxConcurrentRuns {
		return nil, usageErr("--max-concurrent %d: want 0 (the number of CPUs) to %d", n, runs.MaxConcurrentRuns)
	}
	if n := c.Int("max-queue"); n < -1 {
		return nil, usageErr("--max-queue %d: want -1 (no queue), 0 (4 × --max-concurrent) or more", n)
	}
	return runs.NewAdmission(runs.AdmissionConfig{
		MaxConcurrent: c.Int("max-concurrent"), MaxQueue: c.Int("max-queue"), RequestTimeout: c.Duration("request-timeout")})
}

// withEnv gives every flag an environment variable, WASMPY_ and its name in
// upper case with _ for - (--max-body: WASMPY_MAX_BODY), besides any it
// has, as a container or a unit file sets a service up. Flags shared with
// other commands are copied, so only serve reads the new variables.
func withEnv(flags []cli.Flag) []cli.Flag {
	out := make([]cli.Flag, len(flags))
	for i, f := range flags {
		env := "WASMPY_" + strings.ToUpper(strings.ReplaceAll(f.Names()[0], "-", "_"))
		add := func(have []string) []string {
			if slices.Contains(have, env) {
				return have
			}
			return append([]string{env}, have...)
		}
		switch f := f.(type) {
		case *cli.StringFlag:
			g := *f
			g.EnvVars = add(f.EnvVars)
			out[i] = &g
		case *cli.IntFlag:
			g := *f
			g.EnvVars = add(f.EnvVars)
			out[i] = &g
		case *cli.BoolFlag:
			g := *f
			g.EnvVars = add(f.EnvVars)
			out[i] = &g
		case *cli.DurationFlag:
			g := *f
			g.EnvVars = add(f.EnvVars)
			out[i] = &g
		case *cli.StringSliceFlag:
			g := *f
			g.EnvVars = add(f.EnvVars)
			out[i] = &g
		default:
			panic(fmt.Sprintf("withEnv: flag --%s of type %T", f.Names()[0], f))
		}
	}
	return out
}

// readTokens reads bearer tokens from a file (one per line, # comments) and
// from $WASMPY_TOKENS (comma-separated).
func readTokens(path string) ([]string, error) {
	var tokens []string
	for _, t := range strings.Split(os.Getenv("WASMPY_TOKENS"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			tokens = append(tokens, t)
		}
	}
	if path == "" {
		return tokens, nil
	}
	b, err := hostfile.ReadFile(path, maxTokensFile)
	if err != nil {
		return nil, usageErr("--tokens-file %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); t != "" && !strings.HasPrefix(t, "#") {
			tokens = append(tokens, t)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, usageErr("--tokens-file: %v", err)
	}
	if len(tokens) == 0 {
		return nil, usageErr("--tokens-file %s: no tokens in it", path)
	}
	return tokens, nil
}

// budgetFlags bound what sessions and MCP hold, in all and per token.
func budgetFlags() []cli.Flag {
	sb, mb := runs.DefaultSessionBudgets(), mcpserver.DefaultBudgets()
	size := func(n int64) string { return units.FormatSize(uint64(n)) }
	return []cli.Flag{
		&cli.StringFlag{Name: "session-memory", Value: size(sb.Memory), Usage: "budget: the state of every open session together"},
		&cli.StringFlag{Name: "session-memory-per-token", Value: size(sb.MemoryPerCaller), Usage: "budget: the state of one token's open sessions"},
		&cli.StringFlag{Name: "session-store", Value: size(sb.Store), Usage: "budget: what the store keeps of every session"},
		&cli.StringFlag{Name: "session-store-per-token", Value: size(sb.StorePerCaller), Usage: "budget: what the store keeps of one token's sessions"},
		&cli.StringFlag{Name: "sessions-per-token", Value: fmt.Sprint(sb.SessionsPerCaller), Usage: "budget: sessions one token keeps open (all of them: 100)"},
		&cli.StringFlag{Name: "mcp-sessions", Value: fmt.Sprint(mb.Sessions), Usage: "budget: MCP sessions open at once (--mcp)"},
		&cli.StringFlag{Name: "mcp-sessions-per-token", Value: fmt.Sprint(mb.SessionsPerCaller), Usage: "budget: MCP sessions one token keeps open"},
		&cli.StringFlag{Name: "mcp-workspaces", Value: size(mb.Workspaces), Usage: "budget: the files of every MCP session's workspace together"},
		&cli.StringFlag{Name: "mcp-workspaces-per-token", Value: size(mb.WorkspacesPerCaller), Usage: "budget: the files of one token's MCP workspaces"},
	}
}

// budgets reads the budget flags: a size (or a count) each, or "none".
func budgets(c *cli.Context) (runs.SessionBudgets, mcpserver.Budgets, error) {
	var err error
	get := func(name string, isSize bool) int64 {
		v := strings.TrimSpace(c.String(name))
		if err != nil {
			return 0
		}
		if v == "none" {
			return -1
		}
		var n uint64
		var perr error
		if isSize {
			n, perr = units.ParseSizeWithUnit(v)
		} else {
			n, perr = strconv.ParseUint(v, 10, 31)
		}
		switch {
		case perr != nil || n == 0 || n > 1<<50:
			want := "a whole number from 1"
			if isSize {
				want = "a size such as 512MiB or 4GiB"
			}
			err = usageErr("--%s %q: want %s, or none for no bound", name, v, want)
			return 0
		}
		return int64(n)
	}
	sb := runs.SessionBudgets{Memory: get("session-memory", true), MemoryPerCaller: get("session-memory-per-token", true),
		Store: get("session-store", true), StorePerCaller: get("session-store-per-token", true),
		SessionsPerCaller: int(get("sessions-per-token", false))}
	mb := mcpserver.Budgets{Sessions: int(get("mcp-sessions", false)), SessionsPerCaller: int(get("mcp-sessions-per-token", false)),
		Workspaces: get("mcp-workspaces", true), WorkspacesPerCaller: get("mcp-workspaces-per-token", true)}
	return sb, mb, err
}
