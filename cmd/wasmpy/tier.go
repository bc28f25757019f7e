package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
	"github.com/wasmpy/wasmpy/tiers"
)

// tierFlags are the flags of a command that runs code under a tier.
func tierFlags() []cli.Flag {
	return []cli.Flag{&cli.StringFlag{Name: "tier",
		Usage: "run under the trust tier `NAME`: sandbox, testing, trusted, or one of --tiers (see `wasmpy tiers`)"}, tiersFlag()}
}

// tiersFlag is --tiers: a new one for each command, since the flag takes
// its environment variable's value into itself (a shared one would keep
// it).
func tiersFlag() cli.Flag {
	return &cli.StringFlag{Name: "tiers", EnvVars: []string{"WASMPY_TIERS"},
		Usage: "`FILE` (YAML) defining the trust tiers, least trusted first, in place of the built-in ones"}
}

func tiersCommand() *cli.Command {
	return &cli.Command{
		Name:  "tiers",
		Usage: "list the trust tiers (built in, or --tiers FILE, which this checks): their limits, capabilities, imports and validation",
		Description: "A trust tier is a named policy a run gets: its limits, the capabilities it may be granted,\n" +
			"the modules its code may import, and how strictly generated code is validated. gen and def\n" +
			"run under the least trusted tier (sandbox) unless --tier says otherwise; exec, net and\n" +
			"skill run under the most trusted (trusted): the CLI's user wrote the code. Flags such as\n" +
			"--timeout override the tier's limits for one run.",
		Flags:  []cli.Flag{tiersFlag(), jsonFlag},
		Action: tiersAction,
	}
}

func tiersAction(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErr("tiers: unexpected argument %q (give a file with --tiers FILE)", c.Args().First())
	}
	set, err := loadTiers(c)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		type tierJSON struct {
			tiers.Tier
			Limits limitsJSON `json:"limits"`
		}
		out := []tierJSON{}
		for _, t := range set.Tiers() {
			out = append(out, tierJSON{Tier: t, Limits: newLimitsJSON(t.Limits)})
		}
		return console.WriteIndented(c.App.Writer, out)
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIER\tTIMEOUT\tMEMORY\tOUTPUT\tFUEL\tCAPABILITIES\tIMPORTS\tVALIDATION")
	for _, t := range set.Tiers() {
		l := t.Limits
		caps := make([]string, len(t.Capabilities))
		for i, cp := range t.Capabilities {
			caps[i] = string(cp)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, l.Timeout, size(l.Memory), outputText(l.Output), fuelText(l.Fuel),
			orText(strings.Join(caps, ","), "none"), importsText(t.AllowImports), t.Validation)
	}
	return tw.Flush()
}

// limitsJSON is a tier's limits as JSON, in the units the API uses.
type limitsJSON struct {
	TimeoutMS   int64  `json:"timeout_ms"`
	MemoryBytes uint64 `json:"memory_bytes"`
	OutputBytes int    `json:"output_bytes"` // 0: wasmpy's default
	Fuel        uint64 `json:"fuel"`         // 0: unmetered
}

func newLimitsJSON(l wasmpy.Limits) limitsJSON {
	return limitsJSON{TimeoutMS: l.Timeout.Milliseconds(), MemoryBytes: l.Memory, OutputBytes: l.Output, Fuel: l.Fuel}
}

func size(b uint64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", b>>30)
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", b>>20)
	case b >= 1<<10 && b%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", b>>10)
	}
	return fmt.Sprintf("%dB", b)
}

func outputText(o int) string {
	if o <= 0 {
		return "default"
	}
	return size(uint64(o))
}

func fuelText(f uint64) string {
	if f == 0 {
		return "unmetered"
	}
	return fmt.Sprint(f)
}

func importsText(m []string) string {
	if m == nil {
		return "any"
	}
	return fmt.Sprintf("%d modules", len(m))
}

func orText(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

// loadTiers reads --tiers, or returns the built-in tiers. A bad file's
// problems go to stderr, one a line with its line number.
func loadTiers(c *cli.Context) (*tiers.Set, error) {
	path := c.String("tiers")
	if path == "" {
		return tiers.Defaults(), nil
	}
	set, err := tiers.Load(path)
	var te *tiers.Error
	switch {
	case errors.As(err, &te):
		for _, p := range te.Problems {
			where := path
			if p.Line > 0 {
				where = fmt.Sprintf("%s:%d", path, p.Line)
			}
			if p.Path != "" {
				where += ": " + p.Path
			}
			fmt.Fprintf(c.App.ErrWriter, "wasmpy: --tiers: %s: %s\n", console.Clean(where), console.Clean(p.Message))
		}
		return nil, exitStatus(exitUsage)
	case err != nil:
		return nil, usageErr("--tiers: %s", strings.TrimPrefix(err.Error(), "tiers: "))
	}
	return set, nil
}

// chooseTier loads the tiers and returns --tier, or dflt's choice when it
// is not given.
func chooseTier(c *cli.Context, dflt func(*tiers.Set) *tiers.Tier) (*tiers.Set, *tiers.Tier, error) {
	set, err := loadTiers(c)
	if err != nil {
		return nil, nil, err
	}
	if !c.IsSet("tier") {
		return set, dflt(set), nil
	}
	t, err := set.Lookup(c.String("tier"))
	if err != nil {
		return nil, nil, usageErr("--tier: %s", strings.TrimPrefix(err.Error(), "tiers: "))
	}
	return set, t, nil
}

// tierGrants are the capabilities a run under t gets from --grant: what
// t allows of the default (all), or exactly the ones named, each of which
// t must allow.
func tierGrants(c *cli.Context, t *tiers.Tier) ([]wasmpy.Capability, error) {
	g, err := grants(c.String("grant"))
	if err != nil {
		return nil, err
	}
	if c.IsSet("grant") && c.String("grant") != "all" {
		if r := t.Refused(g); r != "" {
			return nil, usageErr("--grant %s: tier %s does not grant it (choose a tier that does with --tier; see `wasmpy tiers`)", r, t.Name)
		}
	}
	return t.Grant(g), nil
}

// operatorPolicy is t.Apply for a run the CLI's own user asks for: the
// limits the flags set replace the tier's, and the rest are the tier's.
// Here the user is the operator, who may give their own code more than a
// tier does; whoever else asks (serve's callers) gets the lower of their
// request and the tier (tiers.Tier.Apply, wasmpy.Limits.Within).
func operatorPolicy(t tiers.Tier) func(wasmpy.Job) wasmpy.Job {
	return func(job wasmpy.Job) wasmpy.Job {
		flags := job.Limits
		job = t.Apply(job)
		job.Limits = flags.Or(t.Limits)
		return job
	}
}
