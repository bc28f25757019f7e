package main

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/assets"
	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
)

func setupCommand() *cli.Command {
	return &cli.Command{
		Name:  "setup",
		Usage: "install the interpreters (verified release archives), or check them",
		Description: "Installs the wasmpy and sci interpreters into the cache dir from the release archives this\n" +
			"binary's lock names: from --from BASE (an http(s) URL or a directory holding what 'make release'\n" +
			"wrote), else $" + assets.ReleaseURLEnv + ", else " + assets.ReleaseURL() + ".\n" +
			"Every file is checked against the lock's SHA-256 before anything is installed; on any error\n" +
			"nothing is. An interpreter already installed as the lock pins it is not fetched again; one\n" +
			"built here from other inputs ('make') is kept unless --from is given. It also fetches the npm\n" +
			"interpreter with the npm client, when there is one, then compiles each interpreter into the cache.",
		Flags: []cli.Flag{cacheFlag,
			&cli.StringFlag{Name: "from", Usage: "release base: an http(s) URL or a local directory (default: $" + assets.ReleaseURLEnv + ", else the project's release)"},
			&cli.BoolFlag{Name: "verify", Usage: "hash every installed interpreter again and compare it with the lock; install nothing"},
			&cli.BoolFlag{Name: "no-download", Usage: "install no archive: check what 'make' built and fetch the npm interpreter (make's path)"},
			&cli.BoolFlag{Name: "build-dir", Usage: "print where 'make interpreter' puts the core build, and exit"},
			&cli.BoolFlag{Name: "sci-dir", Usage: "print where 'make interpreter' puts the sci build (core with numpy), and exit"}},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageErr("setup: unexpected argument %q (a release base goes in --from)", c.Args().First())
			}
			cache := c.String("cache-dir")
			if cache == "" {
				var err error
				if cache, err = assets.DefaultCacheDir(); err != nil {
					return err
				}
			}
			w := c.App.Writer
			switch {
			case c.Bool("build-dir"):
				fmt.Fprintln(w, assets.CoreDir(cache))
				return nil
			case c.Bool("sci-dir"):
				fmt.Fprintln(w, assets.SciDir(cache))
				return nil
			case c.Bool("verify"):
				return verifyInstalled(w, cache)
			case c.IsSet("from") && c.Bool("no-download"):
				return usageErr("setup: --from and --no-download exclude each other")
			case c.IsSet("from") && c.String("from") == "":
				return usageErr("setup: --from needs a URL or a directory")
			}
			if !c.Bool("no-download") {
				if err := installRelease(c, cache); err != nil {
					return err
				}
			}
			if _, err := exec.LookPath("npm"); err != nil {
				fmt.Fprintln(w, "npm interpreter: not fetched (no npm client)")
			} else if path, err := assets.FetchNPM(c.Context, cache); err != nil {
				fmt.Fprintf(w, "npm interpreter: not fetched: %s\n", console.OneLine(err))
			} else {
				fmt.Fprintf(w, "npm interpreter: %s (verified)\n", path)
			}
			usable := 0
			for _, kind := range []string{assets.NPM, assets.Core, assets.Sci} {
				// Opening a sandbox compiles the interpreter into the cache,
				// so the first real run does not pay for it: on every engine
				// this binary has (wasmtime runs the core builds only).
				sb, err := wasmpy.New(c.Context, wasmpy.Config{Interpreter: kind, CacheDir: cache})
				if err != nil {
					fmt.Fprintf(w, "%s interpreter: not available: %s\n", kind, console.OneLine(err))
					continue
				}
				info := sb.Interpreter()
				sb.Close(c.Context)
				if kind != assets.NPM && slices.Contains(wasmpy.Engines(), "wasmtime") {
					if sb, err := wasmpy.New(c.Context, wasmpy.Config{Interpreter: kind, CacheDir: cache, Engine: "wasmtime"}); err != nil {
						fmt.Fprintf(w, "%s interpreter: not compiled for wasmtime: %s\n", kind, console.OneLine(err))
					} else {
						sb.Close(c.Context)
					}
				}
				usable++
				fmt.Fprintf(w, "%s interpreter: CPython %s, sha256 %s, %s (compiled)\n", kind, info.Version, info.SHA256, lockWords(kind, cache))
			}
			if usable == 0 {
				return fmt.Errorf("wasmpy: setup: no interpreter is available: run `wasmpy setup --from URL` with a release, or `make` in a checkout")
			}
			return nil
		},
	}
}

// installRelease installs from the release what the cache lacks: every
// variant not installed, or damaged; with --from also one built here from
// other inputs.
func installRelease(c *cli.Context, cache string) error {
	w := c.App.Writer
	explicit := c.IsSet("from")
	var need []string
	for _, v := range assets.Variants() {
		err := assets.Check(cache, v)
		var mismatch *assets.LockMismatchError
		switch {
		case err == nil:
		case errors.As(err, &mismatch) && !explicit:
			fmt.Fprintf(w, "%s interpreter: built here, and NOT the lock's: %s; kept (`wasmpy setup --from URL` installs the lock's)\n", v, console.OneLine(err))
		default:
			need = append(need, v)
		}
	}
	if len(need) == 0 {
		return nil
	}
	src := c.String("from")
	if src == "" {
		src = assets.ReleaseURL()
	}
	done, err := assets.Install(c.Context, assets.InstallOptions{Source: src, CacheDir: cache, Variants: need,
		Progress: downloadProgress(c.App.ErrWriter)})
	if err != nil {
		return err
	}
	for _, in := range done {
		if !in.Already {
			fmt.Fprintf(w, "%s interpreter: installed from %s into %s (every file matched the lock)\n", in.Variant, src, in.Dir)
		}
	}
	return nil
}

// lockWords says whether an installed interpreter is the lock's.
func lockWords(kind, cache string) string {
	if kind == assets.NPM {
		return "the pinned npm build (verified)"
	}
	err := assets.Check(cache, kind)
	var mismatch *assets.LockMismatchError
	switch {
	case err == nil:
		return "matches the lock (verified)"
	case errors.As(err, &mismatch):
		return fmt.Sprintf("NOT the lock's (it pins %s): built here from other inputs or another toolchain", mismatch.Want)
	default:
		return "not verified: " + console.OneLine(err)
	}
}

// verifyInstalled is setup --verify: every installed interpreter hashed
// again. It fails when one is damaged or not the lock's, or when none is
// installed.
func verifyInstalled(w io.Writer, cache string) error {
	checks, err := assets.VerifyInstalled(cache)
	if err != nil {
		return err
	}
	bad, installed := 0, 0
	for _, r := range checks {
		switch {
		case !r.Installed:
			fmt.Fprintf(w, "%s interpreter: not installed\n", r.Interpreter)
		case r.Err == nil:
			installed++
			fmt.Fprintf(w, "%s interpreter: %s: every file matches the lock (sha256 %s)\n", r.Interpreter, r.Dir, r.SHA256)
		default:
			installed++
			bad++
			fmt.Fprintf(w, "%s interpreter: FAILED: %s\n", r.Interpreter, console.OneLine(r.Err))
		}
	}
	switch {
	case bad > 0:
		return &exitError{code: exitWasmpy, msg: fmt.Sprintf("setup --verify: %d of %d installed interpreters do not match the lock", bad, installed)}
	case installed == 0:
		return &exitError{code: exitWasmpy, msg: "setup --verify: no interpreter is installed in " + cache}
	}
	return nil
}

// downloadProgress shows downloads on stderr: on a terminal one line
// redrawn in place, elsewhere a line when each archive starts and ends.
func downloadProgress(w io.Writer) func(assets.InstallProgress) {
	tty := console.IsTerminal(w)
	return func(p assets.InstallProgress) {
		size := "size unknown"
		if p.Total >= 0 {
			size = mb(p.Total)
		}
		switch {
		case tty:
			fmt.Fprintf(w, "\r\x1b[Kwasmpy: setup: %s: %s of %s", p.Archive, mb(p.Done), size)
			if p.Done == p.Total {
				fmt.Fprintln(w)
			}
		case p.Done == 0:
			fmt.Fprintf(w, "wasmpy: setup: downloading %s (%s)\n", p.Archive, size)
		case p.Done == p.Total:
			fmt.Fprintf(w, "wasmpy: setup: %s: %s read\n", p.Archive, mb(p.Done))
		}
	}
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }
