package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/assets"
)

// buildVersion is wasmpy's module version ("(devel)" for a build from a
// checkout) and the VCS commit it was built from, if known.
func buildVersion() (version, commit string) {
	version = "(devel)"
	if info, ok := debug.ReadBuildInfo(); ok {
		if info.Main.Version != "" {
			version = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				commit = s.Value
			}
		}
	}
	return version, commit
}

// printVersion is `wasmpy --version`: wasmpy's own version and the
// interpreters it would run, with the SHA-256 each was verified against.
func printVersion(c *cli.Context) error {
	w := c.App.Writer
	fmt.Fprintf(w, "wasmpy %s\n", wasmpyVersion())
	fmt.Fprintf(w, "engines: %s\n", engineVersions())
	cache := os.Getenv("WASMPY_CACHE_DIR")
	if cache == "" {
		var err error
		if cache, err = assets.DefaultCacheDir(); err != nil {
			return err
		}
	}
	for _, kind := range []string{assets.Core, assets.Sci, assets.NPM} {
		interp, err := assets.Load(assets.Options{Select: kind, CacheDir: cache})
		if err != nil {
			fmt.Fprintf(w, "%s interpreter: not installed (run 'make interpreter' or 'wasmpy setup')\n", kind)
			continue
		}
		fmt.Fprintf(w, "%s interpreter: CPython %s, sha256 %s\n", kind, interp.Version, interp.SHA256)
	}
	return nil
}

// engineVersions names the engines this binary has, each with the version
// of its module, the CLI's default marked: "wazero v1.12.0, wasmtime v39.0.1 (default)".
func engineVersions() string {
	modules := map[string]string{"wazero": "github.com/tetratelabs/wazero", "wasmtime": "github.com/bytecodealliance/wasmtime-go/v39"}
	versions := map[string]string{}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			versions[d.Path] = d.Version
		}
	}
	var out []string
	def := defaultEngine("", "")
	for _, name := range wasmpy.Engines() {
		s := name
		if v := versions[modules[name]]; v != "" {
			s += " " + v
		}
		if name == def {
			s += " (default)"
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// wasmpyVersion is this build's module version, and its commit when known.
func wasmpyVersion() string {
	version, commit := buildVersion()
	if commit != "" {
		return version + " commit " + commit
	}
	return version
}
