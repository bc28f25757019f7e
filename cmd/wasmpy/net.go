package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
	"github.com/wasmpy/wasmpy/petrinet"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/tiers"
)

func netCommand() *cli.Command {
	return &cli.Command{
		Name:  "net",
		Usage: "turn a Petri net (YAML) into Python: build the files, or run it in the sandbox",
		Description: "A net has places with tokens, transitions with Python inscriptions and optional guards, and\n" +
			"arcs between them (the README's \"A Petri net\" section has an example). Each step fires the\n" +
			"first enabled transition in declaration order, until none is enabled or the step limit is hit.",
		Subcommands: []*cli.Command{
			{
				Name:      "build",
				Usage:     "write the net as Python files: one module per transition and main.py",
				ArgsUsage: "NET.yaml",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "out", Usage: "write the artifact into `DIR` (required)"},
					recordFlag, dbFlag, interpreterFlag, engineFlag, cacheFlag,
				},
				Action: netBuildAction,
			},
			{
				Name:      "run",
				Usage:     "run the net in the sandbox and print the final marking",
				ArgsUsage: "NET.yaml",
				Description: "Checks the net, refuses requirements the sandbox cannot provide (it has the standard library\n" +
					"and the package sets given with --packages), then runs it. Prints the inscriptions' output, then\n" +
					"the final marking; --json prints one object: exec --json's fields plus marking, steps, stopped,\n" +
					"fired and variables.",
				Flags: append([]cli.Flag{
					&cli.BoolFlag{Name: "json", Usage: "print one JSON object with the run and the final marking"},
					&cli.IntFlag{Name: "max-steps", Usage: "stop after `N` firings; 0 = the net's max_steps, else 1000"},
					recordFlag, dbFlag, interpreterFlag, engineFlag, cacheFlag,
				}, append(append(limitFlags(), tierFlags()...), capabilityFlags()...)...),
				Action: netRunAction,
			},
		},
	}
}

// readNet reads and parses the one NET.yaml argument; data is the file's.
func readNet(c *cli.Context) (n *petrinet.Net, path string, data []byte, err error) {
	if c.NArg() != 1 {
		return nil, "", nil, usageErr("net %s: want one NET.yaml, got %d arguments", c.Command.Name, c.NArg())
	}
	path = c.Args().First()
	if data, err = readFile(path); err != nil {
		return nil, "", nil, err
	}
	if n, err = petrinet.Parse(data); err != nil {
		return nil, "", nil, netErr(c, path, err)
	}
	return n, path, data, nil
}

// netErr prints each problem of a bad net as FILE:LINE: element: message.
func netErr(c *cli.Context, path string, err error) error {
	var ne *petrinet.Error
	if !errors.As(err, &ne) {
		return &exitError{code: exitWasmpy, msg: "net: " + strings.TrimPrefix(oneLineText(err.Error()), "petrinet: ")}
	}
	name := filepath.Base(path)
	for _, p := range ne.Problems {
		where := name
		if p.Line > 0 {
			where = fmt.Sprintf("%s:%d", name, p.Line)
		}
		el := ""
		if p.Element != "" {
			el = p.Element + ": "
		}
		fmt.Fprintf(c.App.ErrWriter, "wasmpy: %s: %s%s\n", where, el, p.Message)
	}
	return exitStatus(exitUsage)
}

func netBuildAction(c *cli.Context) error {
	c, err := reparse(c)
	if err != nil || c == nil {
		return err
	}
	if c.String("out") == "" {
		return usageErr("net build: --out DIR is required")
	}
	n, path, data, err := readNet(c)
	if err != nil {
		return err
	}
	sb, err := newSandbox(c, wasmpy.Config{})
	if err != nil {
		return err
	}
	defer sb.Close(c.Context)
	// Nothing of the net runs: its record has the tier a run would default to.
	rec, err := startRecording(c, sb, provenance.KindNet, tiers.Defaults().Loosest().Name, wasmpy.DefaultLimits(), string(data), map[string]any{"build": true})
	if err != nil {
		return err
	}
	defer rec.close()
	err = n.Check(c.Context, sb)
	var art *petrinet.Artifact
	if err == nil {
		art, err = n.Build()
	}
	if rerr := rec.finishNet(c, nil, err); rerr != nil {
		return rerr
	}
	if err != nil {
		return netErr(c, path, err)
	}
	dir := c.String("out")
	if err := art.WriteDir(dir); err != nil {
		return &exitError{code: exitWasmpy, msg: "net build: --out: " + strings.TrimPrefix(err.Error(), "petrinet: ")}
	}
	for _, f := range art.Files {
		fmt.Fprintln(c.App.Writer, filepath.Join(dir, filepath.FromSlash(f.Path)))
	}
	if len(art.Requirements) > 0 {
		fmt.Fprintf(c.App.ErrWriter, "wasmpy: net build: the net requires %s; `net run` refuses what the sandbox lacks\n", strings.Join(art.Requirements, ", "))
	}
	return nil
}

func netRunAction(c *cli.Context) error {
	c, err := reparse(c)
	if err != nil || c == nil {
		return err
	}
	n, path, data, err := readNet(c)
	if err != nil {
		return err
	}
	_, tier, err := chooseTier(c, (*tiers.Set).Loosest)
	if err != nil {
		return err
	}
	lim, err := limits(c)
	if err != nil {
		return err
	}
	cfg, err := sandboxConfig(c)
	if err != nil {
		return err
	}
	if c.Int("max-steps") < 0 {
		return usageErr("--max-steps must not be negative")
	}
	sb, err := newSandbox(c, cfg)
	if err != nil {
		return err
	}
	defer sb.Close(c.Context)
	rec, err := startRecording(c, sb, provenance.KindNet, tier.Name, lim.Or(tier.Limits).Or(wasmpy.DefaultLimits()), string(data),
		map[string]any{"max_steps": c.Int("max-steps")})
	if err != nil {
		return err
	}
	defer rec.close()
	run, err := n.Run(c.Context, sb, petrinet.RunOptions{Limits: lim, MaxSteps: c.Int("max-steps"), Policy: operatorPolicy(*tier)})
	var res *wasmpy.Result
	if run != nil {
		res = run.Result
	}
	if rerr := rec.finishNet(c, res, err); rerr != nil {
		return rerr
	}
	if run == nil && err != nil {
		return netErr(c, path, err)
	}
	outErr := writeOut(c, res.Files, res.File) // reported after the result
	if c.Bool("json") {
		out := struct {
			*wasmpy.Result
			*petrinet.Outcome
		}{res, run}
		if res.Error != nil || err != nil {
			out.Outcome = nil
		}
		if err := printJSON(c.App.Writer, out); err != nil {
			return err
		}
	} else {
		io.WriteString(c.App.Writer, res.Stdout)
		io.WriteString(c.App.ErrWriter, res.Stderr)
		if e := res.Error; e != nil && e.Kind != wasmpy.KindException && e.Kind != wasmpy.KindSyntax && e.Kind != wasmpy.KindExit {
			fmt.Fprintf(c.App.ErrWriter, "wasmpy: %s\n", console.Clean(e.Message))
		}
	}
	if err != nil {
		return netErr(c, path, err)
	}
	if outErr != nil {
		return outErr
	}
	if res.ExitCode != 0 {
		return exitStatus(res.ExitCode)
	}
	if !c.Bool("json") {
		fmt.Fprintln(c.App.Writer, describeMarking(n, run))
	}
	return nil
}

// describeMarking is the final marking in the net's order of places, e.g.
// "marking: start=0 end=1 (1 step; no transition enabled)".
func describeMarking(n *petrinet.Net, run *petrinet.Outcome) string {
	var parts []string
	for _, p := range n.Places {
		parts = append(parts, fmt.Sprintf("%s=%d", p.ID, run.Marking[p.ID]))
	}
	steps := "steps"
	if run.Steps == 1 {
		steps = "step"
	}
	why := "no transition enabled"
	if run.Stopped == "step_limit" {
		why = "stopped at the step limit"
	}
	return fmt.Sprintf("marking: %s (%d %s; %s)", strings.Join(parts, " "), run.Steps, steps, why)
}
