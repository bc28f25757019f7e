package main

import (
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy/assets"
)

// executorInterpreter is the interpreter of an executor: --interpreter
// when given; for the long-lived front ends (serve, mcp), sci when it is
// installed, so that every agent's run has numpy (it costs them the load,
// once, and next to nothing per run: BENCHMARKS.md); else the best
// installed, as everywhere.
func executorInterpreter(c *cli.Context) string {
	if c.IsSet("interpreter") || (c.Command.Name != "serve" && c.Command.Name != "mcp") {
		return c.String("interpreter")
	}
	cache := c.String("cache-dir")
	if cache == "" {
		var err error
		if cache, err = assets.DefaultCacheDir(); err != nil {
			return ""
		}
	}
	if _, err := os.Stat(filepath.Join(assets.SciDir(cache), "python.wasm")); err == nil {
		return assets.Sci
	}
	return ""
}
