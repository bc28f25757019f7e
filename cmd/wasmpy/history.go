package main

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/stores"
)

func filterFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "kind", Usage: "only runs of this kind: " + strings.Join(provenance.Kinds(), ", ")},
		&cli.StringFlag{Name: "skill", Usage: "only this skill's executions (- for runs without a skill)"},
		&cli.StringFlag{Name: "since", Usage: "only executions started since `WHEN`: a duration (24h, 7d) or a time (2025-01-31, RFC 3339)"},
		dbFlag, jsonFlag,
	}
}

func historyCommand() *cli.Command {
	return &cli.Command{
		Name:  "history",
		Usage: "list the provenance records of runs (skills, exec, sessions, gen, def, net), newest first",
		Flags: append(filterFlags(),
			&cli.StringFlag{Name: "outcome", Usage: "only this outcome: ok, invalid_output, exception, timeout, interrupted..."},
			&cli.StringFlag{Name: "actor", Usage: "only this actor id"},
			&cli.IntFlag{Name: "limit", Value: 50, Usage: "at most this many"},
		),
		Action: historyList,
		Subcommands: []*cli.Command{{
			Name: "show", Usage: "print one provenance record", ArgsUsage: "ID",
			Flags:  []cli.Flag{dbFlag, jsonFlag},
			Action: historyShow,
		}},
	}
}

func statsCommand() *cli.Command {
	return &cli.Command{
		Name:   "stats",
		Usage:  "success rate, p50/p90/p99 duration and outcome counts per kind and skill",
		Flags:  filterFlags(),
		Action: statsAction,
	}
}

// filter reads the filter flags.
func filter(c *cli.Context) (provenance.Filter, error) {
	f := provenance.Filter{Kind: c.String("kind"), Skill: c.String("skill"), Outcome: c.String("outcome"), ActorID: c.String("actor"), Limit: c.Int("limit")}
	if c.Int("limit") < 0 {
		return f, usageErr("--limit must not be negative")
	}
	if f.Kind != "" && !slices.Contains(provenance.Kinds(), f.Kind) {
		return f, usageErr("--kind %q: want one of %s", f.Kind, strings.Join(provenance.Kinds(), ", "))
	}
	if s := c.String("since"); s != "" {
		if days, ok := strings.CutSuffix(s, "d"); ok { // 7d: a week
			if n, err := strconv.Atoi(days); err == nil && n > 0 {
				s = strconv.Itoa(24*n) + "h"
			}
		}
		if d, err := time.ParseDuration(s); err == nil && d > 0 {
			f.Since = time.Now().Add(-d)
		} else if t, err := time.Parse(time.RFC3339, s); err == nil {
			f.Since = t
		} else if t, err := time.ParseInLocation(time.DateOnly, s, time.Local); err == nil {
			f.Since = t
		} else {
			return f, usageErr("--since %q: want a duration (24h) or a time (2025-01-31, 2025-01-31T12:00:00Z)", s)
		}
	}
	return f, nil
}

// skillName is a record's skill, or for a run of no skill its kind's
// label: (exec), (gen), (def), (net), (session).
func skillName(kind, s string) string {
	if s == "" {
		return "(" + kind + ")"
	}
	return s
}

// queryStore parses the flags of a command that queries the store (it takes
// no arguments; hint says what the user may have meant) and opens the store.
func queryStore(c *cli.Context, hint string) (*cli.Context, stores.Store, provenance.Filter, error) {
	c, err := reparse(c)
	if err != nil {
		return nil, nil, provenance.Filter{}, err
	}
	if c.Args().Present() {
		return nil, nil, provenance.Filter{}, usageErr("%s: unexpected argument %q%s", c.Command.Name, c.Args().First(), hint)
	}
	f, err := filter(c)
	if err != nil {
		return nil, nil, provenance.Filter{}, err
	}
	st, err := openStore(c)
	if err != nil {
		return nil, nil, provenance.Filter{}, err
	}
	return c, st, f, nil
}

func historyList(c *cli.Context) error {
	c, st, f, err := queryStore(c, " (did you mean: history show ID?)")
	if err != nil {
		return err
	}
	defer st.Close()
	recs, err := st.List(c.Context, f)
	if err != nil {
		return &exitError{code: exitWasmpy, msg: console.OneLine(err)}
	}
	if c.Bool("json") {
		return console.WriteIndented(c.App.Writer, recs)
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STARTED\tEXECUTION ID\tKIND\tSKILL\tVERSION\tOUTCOME\tDURATION\tACTOR")
	for _, r := range recs {
		actor := console.Clean(r.ActorID)
		if r.ActorType != "" {
			actor += " (" + console.Clean(r.ActorType) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.StartedAt.Local().Format("2006-01-02 15:04:05"), console.Clean(r.ExecutionID),
			console.Clean(r.Kind), console.Clean(skillName(r.Kind, r.Skill)), console.Clean(r.Version), console.Clean(r.Outcome), ms(r.DurationMS), actor)
	}
	return tw.Flush()
}

func ms(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v < 10:
		return fmt.Sprintf("%.2fms", v)
	case v < 10000:
		return fmt.Sprintf("%.0fms", v)
	}
	return fmt.Sprintf("%.1fs", v/1000)
}

func historyShow(c *cli.Context) error {
	c, id, err := oneArg(c, "ID")
	if err != nil {
		return err
	}
	if !provenance.ValidID(id) && !idPrefixRE.MatchString(id) {
		return usageErr("history show: %q is not an execution id (a UUID such as 3f2c...-..., or its first 4 characters or more)", id)
	}
	st, err := openStore(c)
	if err != nil {
		return err
	}
	defer st.Close()
	if !provenance.ValidID(id) { // a prefix: it must name one execution
		if id, err = uniquePrefix(c, st, id); err != nil {
			return err
		}
	}
	r, err := st.Get(c.Context, id)
	if err != nil {
		if errors.Is(err, provenance.ErrNotFound) {
			return &exitError{code: 1, msg: fmt.Sprintf("no execution %s in %s", id, st.Where())}
		}
		return &exitError{code: exitWasmpy, msg: console.OneLine(err)}
	}
	if c.Bool("json") {
		return console.WriteIndented(c.App.Writer, r)
	}
	printRecord(c.App.Writer, r)
	return nil
}

// uniquePrefix returns the one execution id starting with prefix, or
// prefix itself when none does (Get then says so). Several are a usage
// error that says how many, and lists the first few.
func uniquePrefix(c *cli.Context, st stores.Store, prefix string) (string, error) {
	const shown = 5
	recs, err := st.List(c.Context, provenance.Filter{IDPrefix: prefix, Limit: shown})
	if err != nil {
		return "", &exitError{code: exitWasmpy, msg: console.OneLine(err)}
	}
	switch len(recs) {
	case 0:
		return prefix, nil
	case 1:
		return recs[0].ExecutionID, nil
	}
	n := len(recs)
	if n == shown { // count them all
		stats, err := st.Stats(c.Context, provenance.Filter{IDPrefix: prefix})
		if err != nil {
			return "", &exitError{code: exitWasmpy, msg: console.OneLine(err)}
		}
		n = 0
		for _, s := range stats {
			n += s.Total
		}
	}
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = r.ExecutionID
	}
	more := ""
	if n > len(ids) {
		more = ", ..."
	}
	return "", usageErr("history show: %s is ambiguous: %d executions start with it (%s%s); give more of the id", prefix, n, strings.Join(ids, ", "), more)
}

// idPrefixRE is the start of an execution id, 4 characters or more.
var idPrefixRE = regexp.MustCompile(`^[0-9a-f]{4}[0-9a-f-]{0,31}$`)

func printRecord(w io.Writer, r *provenance.Record) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	finished := "-"
	if r.FinishedAt != nil {
		finished = r.FinishedAt.Local().Format(time.RFC3339Nano)
	}
	outcome := r.Outcome
	if r.Error != "" {
		outcome += ": " + r.Error
	}
	var calls []string
	for _, hc := range r.HostCalls {
		calls = append(calls, hc.Name)
	}
	callText := fmt.Sprint(r.HostCallsTotal)
	if len(calls) > 0 {
		callText += " (" + strings.Join(calls, ", ") + ")"
	}
	l := r.Limits
	for _, kv := range [][2]string{
		{"execution_id", r.ExecutionID},
		{"kind", r.Kind},
		{"skill", skillName(r.Kind, r.Skill) + " " + r.Version},
		{"actor", r.ActorID + " (" + r.ActorType + ")"},
		{"approved", fmt.Sprint(r.Approved)},
		{"tier", r.Tier},
		{"outcome", outcome},
		{"started", r.StartedAt.Local().Format(time.RFC3339Nano)},
		{"finished", finished},
		{"duration", ms(r.DurationMS)},
		{"fuel_used", fmt.Sprint(r.FuelUsed)},
		{"memory_peak", fmt.Sprintf("%d bytes", r.MemoryPeakBytes)},
		{"host_calls", callText},
		{"limits", fmt.Sprintf("timeout %dms, memory %d bytes, output %d bytes, fuel %d", l.TimeoutMS, l.MemoryBytes, l.OutputBytes, l.Fuel)},
		{"code_hash", r.CodeHash},
		{"codegen", codegenText(r.Codegen)},
		{"inputs_hash", r.InputsHash},
		{"outputs_hash", r.OutputsHash},
		{"interpreter", fmt.Sprintf("%s %s sha256:%s", r.Interpreter.Kind, r.Interpreter.Version, r.Interpreter.SHA256)},
	} {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[0], console.Clean(kv[1]))
	}
	tw.Flush()
}

func codegenText(g *provenance.Codegen) string {
	if g == nil {
		return "-"
	}
	s := fmt.Sprintf("%d attempts, validated %t, cached %t", g.Attempts, g.Validated, g.Cached)
	if g.TestsPassed+g.TestsFailed > 0 {
		s += fmt.Sprintf(", tests %d passed %d failed", g.TestsPassed, g.TestsFailed)
	}
	return s
}

func statsAction(c *cli.Context) error {
	c, st, f, err := queryStore(c, "")
	if err != nil {
		return err
	}
	defer st.Close()
	stats, err := st.Stats(c.Context, f)
	if err != nil {
		return &exitError{code: exitWasmpy, msg: console.OneLine(err)}
	}
	if c.Bool("json") {
		return console.WriteIndented(c.App.Writer, stats)
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tSKILL\tRUNS\tSUCCESS\tP50\tP90\tP99\tOUTCOMES")
	for _, s := range stats {
		var outs []string
		for o, n := range s.Outcomes {
			outs = append(outs, fmt.Sprintf("%s=%d", o, n))
		}
		sort.Strings(outs)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f%%\t%s\t%s\t%s\t%s\n", console.Clean(s.Kind), console.Clean(skillName(s.Kind, s.Skill)), s.Total, 100*s.SuccessRate,
			ms(s.P50MS), ms(s.P90MS), ms(s.P99MS), console.Clean(strings.Join(outs, " ")))
	}
	return tw.Flush()
}
