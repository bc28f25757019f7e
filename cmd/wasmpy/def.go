package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy/codegen"
	"github.com/wasmpy/wasmpy/provenance"
)

func defCommand() *cli.Command {
	return &cli.Command{
		Name:      "def",
		Usage:     "ask an LLM for a function's body from its signature, and call it in the sandbox",
		ArgsUsage: "SIGNATURE_OR_FILE | -",
		Description: "SIGNATURE_OR_FILE is a Python def line with an optional docstring, or a file holding one\n" +
			"(- reads it from stdin). The LLM writes the function, which is checked as gen's code is, then\n" +
			"called with --args and --kwargs (passed as JSON data, never pasted into the source). Prints\n" +
			"what it returned as JSON; what it printed goes to stderr. The code is cached by signature.\n" +
			"--args and --kwargs are checked against the signature before the LLM is asked (exit 2).\n" +
			"The final function is rendered from a code template (--style typed|simple, --code-template),\n" +
			"with a docstring holding Args and Returns. The docstring's doctest examples run as tests;\n" +
			"--tests asks the model for unittest tests too. A failing test, like a failed run, is fed back\n" +
			"for another attempt. Every function is graded (size, cyclomatic complexity, type hints,\n" +
			"docstring, tests); --min-quality turns grades into failures, e.g.\n" +
			"--min-quality complexity=5,lines=30,tests=3,hints,docstring (maxima, minimum tests passed).\n" +
			"--json prints one object: gen --json's fields plus function, value, test_code, tests, quality.",
		Flags: append(append([]cli.Flag{
			&cli.StringFlag{Name: "args", Value: "[]", Usage: "positional arguments, a `JSON_ARRAY`"},
			&cli.StringFlag{Name: "kwargs", Value: "{}", Usage: "keyword arguments, a `JSON_OBJECT`"},
			&cli.BoolFlag{Name: "tests", Usage: "ask for unittest tests with the function, and run them"},
			&cli.StringFlag{Name: "style", Value: "typed", Usage: "the final function's template: typed or simple"},
			&cli.StringFlag{Name: "code-template", Usage: "code template `FILE` overriding the embedded one (see --print-code-template)"},
			&cli.BoolFlag{Name: "print-code-template", Usage: "print the embedded code template (final function, test scaffold) and exit"},
			&cli.StringFlag{Name: "min-quality", Usage: "`THRESHOLDS` the function must meet: complexity=N,lines=N,tests=N,hints,docstring"},
		}, codegenFlags()...), append(append(limitFlags(), tierFlags()...), capabilityFlags()...)...),
		Action: defAction,
	}
}

func defAction(c *cli.Context) error {
	c, err := reparse(c)
	if err != nil || c == nil {
		return err
	}
	if c.Bool("print-template") {
		_, err := io.WriteString(c.App.Writer, codegen.FunctionTemplate())
		return err
	}
	if c.Bool("print-code-template") {
		_, err := io.WriteString(c.App.Writer, codegen.CodeTemplate())
		return err
	}
	sig, err := defSignature(c)
	if err != nil {
		return err
	}
	var args []any
	if err := json.Unmarshal([]byte(c.String("args")), &args); err != nil || args == nil {
		return usageErr("--args %q: want a JSON array, e.g. '[1, \"two\"]'", c.String("args"))
	}
	var kwargs map[string]any
	if err := json.Unmarshal([]byte(c.String("kwargs")), &kwargs); err != nil || kwargs == nil {
		return usageErr("--kwargs %q: want a JSON object, e.g. '{\"n\": 3}'", c.String("kwargs"))
	}
	g, sb, tier, err := newGenerator(c, "function")
	if err != nil {
		return err
	}
	defer sb.Close(c.Context)
	rec, err := startRecording(c, sb, provenance.KindDef, tier.Name, codegenLimits(c, tier), "", map[string]any{"signature": sig, "args": args, "kwargs": kwargs})
	if err != nil {
		return err
	}
	defer rec.close()
	fr, err := g.Function(c.Context, sig, args, kwargs)
	if rerr := rec.finishCodegen(c, nil, fr, err); rerr != nil {
		return rerr
	}
	if done, err := reportCodegen(c, tier.Name, nil, fr, err); done || err != nil {
		return err
	}
	w := c.App.Writer
	io.WriteString(c.App.ErrWriter, fr.Result.Stdout)
	io.WriteString(c.App.ErrWriter, fr.Result.Stderr)
	if c.Bool("show-code") {
		showCode(w, &fr.Report)
		io.WriteString(w, "# --- value ---\n")
	}
	fmt.Fprintf(w, "%s\n", fr.Value)
	return nil
}

// parseQuality reads --min-quality: comma-separated thresholds.
func parseQuality(s string) (codegen.QualityBar, error) {
	bar, err := codegen.ParseQualityBar(s)
	if err != nil {
		return bar, usageErr("--min-quality: %s", strings.TrimPrefix(strings.TrimPrefix(err.Error(), "codegen: "), "quality threshold "))
	}
	return bar, nil
}

// defSignature reads the signature: stdin for "-", a file if the argument
// names one, else the argument itself when it is a def line.
func defSignature(c *cli.Context) (string, error) {
	if c.NArg() != 1 {
		return "", usageErr("def: want one SIGNATURE_OR_FILE, got %d arguments", c.NArg())
	}
	arg := c.Args().First()
	switch {
	case arg == "-":
		b, err := readAll(c.App.Reader, "stdin")
		return string(b), err
	case strings.HasPrefix(strings.TrimSpace(arg), "def "):
		return arg, nil
	}
	if _, err := os.Stat(arg); err != nil {
		return "", usageErr("def: %q is neither a file nor a signature (def name(...):)", arg)
	}
	b, err := readFile(arg)
	return string(b), err
}
