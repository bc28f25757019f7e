package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/assets"
)

func setupCommand() *cli.Command {
	return &cli.Command{
		Name:  "setup",
		Usage: "fetch and verify the interpreters",
		Description: "Fetches the npm interpreter with the npm client and checks its SHA-256, and checks the\n" +
			"wasmpy and sci builds that 'make interpreter' made, if any. Both live in the cache dir.",
		Flags: []cli.Flag{cacheFlag,
			&cli.BoolFlag{Name: "build-dir", Usage: "print where 'make interpreter' puts the wasmpy build, and exit"},
			&cli.BoolFlag{Name: "sci-dir", Usage: "print where 'make interpreter' puts the sci build (wasmpy with numpy), and exit"}},
		Action: func(c *cli.Context) error {
			cache := c.String("cache-dir")
			if cache == "" {
				var err error
				if cache, err = assets.DefaultCacheDir(); err != nil {
					return err
				}
			}
			if c.Bool("build-dir") {
				fmt.Fprintln(c.App.Writer, assets.WasmpyDir(cache))
				return nil
			}
			if c.Bool("sci-dir") {
				fmt.Fprintln(c.App.Writer, assets.SciDir(cache))
				return nil
			}
			path, err := assets.FetchNPM(c.Context, cache)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "npm interpreter: %s (verified)\n", path)
			for _, kind := range []string{assets.NPM, assets.Wasmpy, assets.Sci} {
				// Opening a sandbox compiles the interpreter into the cache,
				// so the first real run does not pay for it.
				sb, err := wasmpy.New(c.Context, wasmpy.Config{Interpreter: kind, CacheDir: cache})
				if err != nil {
					fmt.Fprintf(c.App.Writer, "%s interpreter: not available: %s\n", kind, oneLine(err))
					continue
				}
				info := sb.Interpreter()
				sb.Close(c.Context)
				fmt.Fprintf(c.App.Writer, "%s interpreter: CPython %s, sha256 %s (verified, compiled)\n", kind, info.Version, info.SHA256)
			}
			return nil
		},
	}
}
