package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
	"github.com/wasmpy/wasmpy/provenance"
)

func tokenCommand() *cli.Command {
	return &cli.Command{
		Name:  "token",
		Usage: "create, list and delete the service's bearer tokens (kept in the store, as hashes)",
		Description: "A token has a role: runner (runs skills and code) or admin (also registers, disables\n" +
			"and deletes skill versions), and a maximum trust tier its runs may ask for (default sandbox).\n" +
			"`serve` over the same --db asks for a token on every request once the store holds one\n" +
			"(checked when it starts); a token created or deleted later takes effect at once.",
		Subcommands: []*cli.Command{
			{
				Name: "create", Usage: "make a token and print it (once: only its hash is kept)", ArgsUsage: "NAME",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "role", Value: provenance.RoleRunner, Usage: "`ROLE`: runner or admin"},
					&cli.StringFlag{Name: "max-tier", Value: provenance.DefaultMaxTier, Usage: "the most trusted `TIER` its runs may ask for: sandbox, testing, trusted, or one of --tiers"},
					tiersFlag(), dbFlag,
				},
				Action: tokenCreate,
			},
			{
				Name: "list", Usage: "list the tokens: name, role, max tier, created",
				Flags:  []cli.Flag{dbFlag, jsonFlag},
				Action: tokenList,
			},
			{
				Name: "delete", Usage: "delete a token: requests with it are refused at once", ArgsUsage: "NAME",
				Flags:  []cli.Flag{dbFlag},
				Action: tokenDelete,
			},
		},
	}
}

func tokenCreate(c *cli.Context) error {
	c, name, err := oneArg(c, "NAME")
	if err != nil {
		return err
	}
	tok, secret, err := provenance.NewToken(name, c.String("role"), c.String("max-tier"))
	if err != nil {
		return usageErr("token create: %s", strings.TrimPrefix(err.Error(), "provenance: token: "))
	}
	set, err := loadTiers(c) // the service's tiers, as far as this process knows them
	if err != nil {
		return err
	}
	if _, err := set.Lookup(tok.MaxTier); err != nil {
		return usageErr("token create: --max-tier: %s", strings.TrimPrefix(err.Error(), "tiers: "))
	}
	st, err := openStore(c)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.CreateToken(c.Context, tok); err != nil {
		if errors.Is(err, provenance.ErrExists) {
			return &exitError{code: 1, msg: fmt.Sprintf("token create: a token called %q exists in %s (token delete %s first)", name, st.Where(), name)}
		}
		return &exitError{code: exitWasmpy, msg: console.OneLine(err)}
	}
	fmt.Fprintln(c.App.Writer, secret)
	fmt.Fprintf(c.App.ErrWriter, "wasmpy: token %q (role %s, max tier %s) created in %s; it is shown only this once\n",
		tok.Name, tok.Role, tok.MaxTier, st.Where())
	return nil
}

func tokenList(c *cli.Context) error {
	c, err := reparse(c)
	if err != nil {
		return err
	}
	if c.Args().Present() {
		return usageErr("token list: unexpected argument %q", c.Args().First())
	}
	st, err := openStore(c)
	if err != nil {
		return err
	}
	defer st.Close()
	toks, err := st.ListTokens(c.Context)
	if err != nil {
		return &exitError{code: exitWasmpy, msg: console.OneLine(err)}
	}
	if c.Bool("json") {
		return console.WriteIndented(c.App.Writer, toks)
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tROLE\tMAX TIER\tCREATED")
	for _, t := range toks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", console.Clean(t.Name), console.Clean(t.Role), console.Clean(t.MaxTier), t.CreatedAt.Local().Format("2006-01-02 15:04:05"))
	}
	return tw.Flush()
}

func tokenDelete(c *cli.Context) error {
	c, name, err := oneArg(c, "NAME")
	if err != nil {
		return err
	}
	st, err := openStore(c)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.DeleteToken(c.Context, name); err != nil {
		if errors.Is(err, provenance.ErrNotFound) {
			return &exitError{code: 1, msg: fmt.Sprintf("token delete: no token called %q in %s", name, st.Where())}
		}
		return &exitError{code: exitWasmpy, msg: console.OneLine(err)}
	}
	fmt.Fprintf(c.App.ErrWriter, "wasmpy: token %q deleted\n", name)
	return nil
}
