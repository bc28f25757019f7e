package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy/codegen"
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
			"--json prints one object: exec --json's fields plus function, value, code, cached, attempts.",
		Flags: append(append([]cli.Flag{
			&cli.StringFlag{Name: "args", Value: "[]", Usage: "positional arguments, a `JSON_ARRAY`"},
			&cli.StringFlag{Name: "kwargs", Value: "{}", Usage: "keyword arguments, a `JSON_OBJECT`"},
		}, codegenFlags()...), append(limitFlags(), capabilityFlags()...)...),
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
	g, sb, err := newGenerator(c, "function")
	if err != nil {
		return err
	}
	defer sb.Close(c.Context)
	fr, err := g.Function(c.Context, sig, args, kwargs)
	if fr == nil && err != nil {
		if errors.Is(err, codegen.ErrBadSignature) {
			return usageErr("def: %s", strings.TrimPrefix(err.Error(), "codegen: "))
		}
		return codegenErr(c, err)
	}
	if c.Bool("json") {
		out := codegenJSON{Result: fr.Result, Function: fr.Name, Code: fr.Code, Cached: fr.Cached, Attempts: fr.Attempts}
		if fr.Result != nil {
			out.Value = fr.Value
		}
		if err := printJSON(c.App.Writer, out); err != nil {
			return err
		}
	} else {
		noteAttempts(c, &fr.Report, err == nil)
	}
	if err != nil {
		return codegenErr(c, err)
	}
	if c.Bool("dry-run") {
		if !c.Bool("json") {
			io.WriteString(c.App.Writer, fr.Code)
		}
		return nil
	}
	if err := writeOut(c, fr.Result); err != nil {
		return err
	}
	if c.Bool("json") {
		return nil
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
