package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
	"github.com/wasmpy/wasmpy/internal/hostfile"
	"github.com/wasmpy/wasmpy/packages"
)

func pkgCommand() *cli.Command {
	return &cli.Command{
		Name:  "pkg",
		Usage: "build and inspect package sets (pure-Python packages the sandbox may import)",
		Subcommands: []*cli.Command{
			{
				Name:      "build",
				Usage:     "assemble wheels and directories into a package set",
				ArgsUsage: "--out SET.zip WHEEL_OR_DIR...",
				Description: "Checks each wheel's RECORD hashes, refuses native code and modules that shadow the\n" +
					"standard library, compiles every module with the sandbox's interpreter, and writes SET.zip:\n" +
					"the same inputs give the same bytes. A DIR is laid out as site-packages, or is a package.\n" +
					"Run code with it: wasmpy exec --packages SET.zip script.py",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "out", Usage: "write the set to `SET.zip`", Required: true},
					interpreterFlag, engineFlag, cacheFlag,
				},
				Action: pkgBuildAction,
			},
			{
				Name:      "show",
				Usage:     "print a package set's manifest, after checking the set",
				ArgsUsage: "SET.zip",
				Action:    pkgShowAction,
			},
		},
	}
}

func pkgBuildAction(c *cli.Context) error {
	c, err := reparse(c)
	if err != nil {
		return err
	}
	inputs := c.Args().Slice()
	if len(inputs) == 0 {
		return usageErr("pkg build: no input: give wheels or directories")
	}
	out := c.String("out")
	sb, err := newSandbox(c, wasmpy.Config{})
	if err != nil {
		return err
	}
	defer sb.Close(c.Context)
	set, m, err := packages.Build(c.Context, packages.BuildOptions{Inputs: inputs, Python: compiler(sb)})
	if err != nil {
		return pkgErr(err)
	}
	if err := writeFileAtomic(out, set); err != nil {
		return &exitError{code: exitWasmpy, msg: fmt.Sprintf("--out: %v", err)}
	}
	sum := sha256.Sum256(set)
	for path, why := range m.Uncompiled {
		fmt.Fprintf(c.App.ErrWriter, "wasmpy: warning: %s: kept without bytecode: %s\n", path, why)
	}
	fmt.Fprintf(c.App.ErrWriter, "wasmpy: wrote %s: %d distributions, modules %s; sha256 %x\n",
		out, len(m.Distributions), strings.Join(m.Modules, ", "), sum)
	return nil
}

// compiler runs the set's compile step in sb: one generous run per batch.
func compiler(sb *wasmpy.Sandbox) func(context.Context, string, []byte) ([]byte, error) {
	return func(ctx context.Context, code string, stdin []byte) ([]byte, error) {
		res, err := sb.Run(ctx, wasmpy.Job{Code: code, Filename: "<wasmpy-compile>", Stdin: bytes.NewReader(stdin),
			Limits: wasmpy.Limits{Timeout: 10 * time.Minute, Memory: 1 << 30, Output: 256 << 20}})
		if err != nil {
			return nil, err
		}
		if err := res.Err(); err != nil {
			return nil, fmt.Errorf("%v: %s", err, lastLine(res.Stderr))
		}
		return []byte(res.Stdout), nil
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}

func pkgShowAction(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("pkg show: give one SET.zip")
	}
	s, err := packages.Open(c.Args().First())
	if err != nil {
		return pkgErr(err)
	}
	enc := json.NewEncoder(c.App.Writer)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		SHA256 string `json:"sha256"`
		packages.Manifest
	}{s.SHA256, s.Manifest})
}

// pkgErr makes a refused input or set, or a module to preload that does
// not import, a usage error (exit 2), and the rest wasmpy's own failure.
func pkgErr(err error) error {
	var pe *packages.Error
	var le *wasmpy.PreloadError
	var he *hostfile.Error // a file handed in (--interpreter FILE) refused
	if errors.As(err, &pe) || errors.As(err, &le) || errors.As(err, &he) {
		return usageErr("%s", strings.TrimPrefix(console.OneLine(err), "wasmpy: "))
	}
	return &exitError{code: exitWasmpy, msg: strings.TrimPrefix(console.OneLine(err), "wasmpy: ")}
}

func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".wasmpy-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
