package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/cmd/wasmpy/internal/console"
	"github.com/wasmpy/wasmpy/internal/hostfile"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/tiers"
)

const maxInput = 64 << 20 // the most code wasmpy reads

func execCommand() *cli.Command {
	return &cli.Command{
		Name:      "exec",
		Usage:     "run a Python script in the sandbox, as python3 does",
		ArgsUsage: "[-c CODE | -m MODULE | SCRIPT | DIR | APP.pyz | -] [ARGS...]",
		Description: "Runs SCRIPT (a file; - reads the code from stdin), -c CODE or -m MODULE in a fresh\n" +
			"sandbox. As with python3, wasmpy's flags come first: everything after the script, CODE or\n" +
			"MODULE is the script's sys.argv[1:]. With no script, stdin is the code, or, on a terminal,\n" +
			"an interactive session (a REPL) starts; -i starts one after the script.\n\n" +
			"As python3 puts it on sys.path, the guest sees, read-only at /app: SCRIPT's directory (SCRIPT\n" +
			"runs as /app/NAME); DIR, whose __main__.py runs; a zipapp's files (app.pyz); for -m, the\n" +
			"current directory when MODULE is there. Names starting with \".\" are hidden, symlinks that\n" +
			"leave it refused. -P mounts nothing; so do -c and a script on stdin.\n\n" +
			"The script's stdout and stderr stream as written; its stdin is wasmpy's own, as it\n" +
			"arrives (--stdin FILE gives a file instead, --stdin /dev/null nothing). Ctrl-C raises\n" +
			"KeyboardInterrupt in the script; a second one stops it. A value given to submit_result\n" +
			"is shown on stderr. --json prints one JSON object with the whole result instead.\n\n" +
			"--session FILE keeps Python state across invocations: the run starts from the state\n" +
			"saved in FILE (a new session if FILE does not exist) and saves what it leaves back to\n" +
			"FILE: variables, imports, functions, classes and workspace files carry over. A turn\n" +
			"stopped by a limit or a signal leaves FILE's state as it was.\n\n" +
			"The run is handed to your resident wasmpy process, which keeps the interpreter loaded\n" +
			"(one starts in the background when none runs; see `wasmpy help resident`): the same run,\n" +
			"a fresh instance each time, started in milliseconds. --resident=false runs it here.\n\n" +
			"The script runs in the trusted tier (every capability, wasmpy's default limits) unless\n" +
			"--tier says otherwise (`wasmpy tiers`); limit flags override the tier's for this run.\n" +
			"As with python3 there is no wall-clock limit unless --timeout asks for one, or --tier\n" +
			"(its timeout; the REPL still has none); serve, mcp and sessions over HTTP keep their tier's.\n\n" +
			"Exit status: the script's own; 130 after Ctrl-C, 143 after SIGTERM. Sandbox outcomes\n" +
			"have their own: 120 internal, 121 memory, 122 output, 123 fuel, 124 timeout; 2 is a\n" +
			"usage error, 125 a wasmpy failure.",
		Flags:  append(execFlags(), append(append(execLimitFlags(), tierFlags()...), capabilityFlags()...)...),
		Action: execAction,
	}
}

func execFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "c", Usage: "run `CODE` (sys.argv[0] is '-c')"},
		&cli.StringFlag{Name: "m", Usage: "run `MODULE` as __main__"},
		&cli.BoolFlag{Name: "i", Usage: "start an interactive session after the script"},
		&cli.BoolFlag{Name: "P", Usage: "mount nothing of the host: not the script's directory, nor for -m the current one"},
		&cli.BoolFlag{Name: "json", Usage: "print one JSON object with the whole result"},
		&cli.StringFlag{Name: "stdin", Value: "-", Usage: "the script's stdin: `FILE`, or - for wasmpy's own, streamed"},
		&cli.StringFlag{Name: "session", Usage: "run as the next turn of the session saved in `FILE`, and save it back (a new one if FILE does not exist)"},
		recordFlag, dbFlag,
		&cli.StringFlag{Name: "grant", Value: "all", Usage: "comma-separated `CAPABILITIES` the script may call: all (every built-in the tier allows), none, or names such as read_file,submit_result"},
		interpreterFlag, engineFlag, cacheFlag, allowHTTPFlag,
		&cli.BoolFlag{Name: "resident", Value: true, EnvVars: []string{"WASMPY_RESIDENT"},
			Usage: "hand the run to your resident wasmpy process, starting one if none runs (see wasmpy help resident); --resident=false or WASMPY_RESIDENT=0 runs it in this process"},
	}
}

func execAction(c *cli.Context) error {
	if err := checkEngine(c); err != nil {
		return err
	}
	job, appPath, err := execJob(c)
	if app, ok := job.App.(*wasmpy.App); ok {
		defer app.Close()
	}
	if err != nil {
		return err
	}
	_, tier, err := chooseTier(c, (*tiers.Set).Loosest)
	if err != nil {
		return err
	}
	if job.Limits, err = limits(c); err != nil {
		return err
	}
	if job.Grants, err = tierGrants(c, tier); err != nil {
		return err
	}
	if !c.IsSet("timeout") && (job.Interactive || !c.IsSet("tier")) {
		// As python3: a script runs as long as it needs, a session as long
		// as its user; --timeout, or --tier for a script, asks for a limit.
		job.Limits.Timeout = math.MaxInt64
	}
	job = operatorPolicy(*tier)(job)
	if job, err = withHTTP(c, job); err != nil {
		return err
	}
	cfg, err := sandboxConfig(c)
	if err != nil {
		return err
	}
	if c.IsSet("session") {
		if c.String("session") == "" {
			return usageErr("--session: give a FILE")
		}
		if cfg.SessionKey, err = sessionKey(); err != nil {
			return err
		}
	}
	sigs, stopSignals := notifySignals()
	defer stopSignals()
	if handed, err := handOff(c, cfg, job, appPath, sigs); handed {
		return err
	}
	// The sandbox's image is made (when not cached) under the run's own
	// time and memory: a preload that loops ends with --timeout.
	cfg.Limits = job.Limits.Or(cfg.Limits)
	sb, stop, err := loadWithSignals(c, cfg, sigs)
	if err != nil {
		return err
	}
	if stop != 0 {
		return report(c, console.NotRun(stop, "interrupted while the sandbox was loading"), true)
	}
	defer sb.Close(c.Context)
	runJob := sb.Run
	var sess *wasmpy.Session
	var sf *sessionFile
	if c.IsSet("session") {
		// A turn on the file waits for the one holding it, at most this run's timeout.
		wait := job.Limits.Or(cfg.Limits).Or(wasmpy.DefaultLimits()).Timeout
		if sf, sess, stop, err = openSession(c, sb, c.String("session"), wait, sigs); err != nil {
			return err
		}
		if stop != 0 {
			return report(c, console.NotRun(stop, "interrupted while waiting for the session file"), true)
		}
		defer sf.close()
		runJob = sess.Run
	}
	var out *console.Streams
	var term *console.Terminal
	if !c.Bool("json") {
		out = console.NewStreams(c.App.Writer, c.App.ErrWriter)
		job.Stdout, job.Stderr = out.Stdout(), out.Stderr()
		if term = console.NewTerminal(c.App.Reader, c.App.Writer, out.Flush); term != nil && job.Interactive && job.Stdin == c.App.Reader {
			job.Stdout, job.Stdin = term.REPL(job.Stdout)
		}
	}
	kind := provenance.KindExec
	if sess != nil {
		kind = provenance.KindSession // a turn of a session saved in a file
	}
	rec, err := startRecording(c, sb, kind, tier.Name, sb.RunLimits(job.Limits), programCode(job), map[string]any{"args": nonNilArgs(job.Args)})
	if err != nil {
		return err
	}
	defer rec.close()
	res, stop, err := console.Run(c.Context, runJob, &job, term, sigs)
	if out != nil {
		out.Flush()
	}
	if ferr := rec.finish(c, res, err); ferr != nil {
		return ferr
	}
	if err != nil {
		return &exitError{code: exitWasmpy, msg: console.OneLine(err)}
	}
	if sess != nil {
		if err := sf.save(sess); err != nil {
			return err
		}
	}
	return endExec(c, res, stop, res.File, out == nil || out.AtLineStart())
}

// endExec ends a run, in this process or the resident's: the status a
// signal imposed, the files for --out (file gives their contents), the
// report. A failure to write the files is the exit status, after the report.
func endExec(c *cli.Context, res *wasmpy.Result, stop int, file func(string) ([]byte, bool), atLineStart bool) error {
	if stop != 0 {
		res.ExitCode = stop
	}
	outErr := writeOut(c, res.Files, file)
	if err := report(c, res, atLineStart); outErr == nil {
		return err
	}
	return outErr // after the report: --json prints its one object still
}

// execJob reads the code (or module), the script's arguments and its
// stdin. It returns the path of the directory or zipapp it mounts, if any.
func execJob(c *cli.Context) (job wasmpy.Job, appPath string, err error) {
	args := c.Args().Slice()
	job.Interactive = c.Bool("i")
	stdinUsed := false
	switch code := c.String("c"); {
	case c.IsSet("c"):
		if code == "" {
			return job, "", usageErr("-c: empty code")
		}
		job.Code, job.Filename = code, "<string>"
	case c.IsSet("m"):
		if c.String("m") == "" {
			return job, "", usageErr("-m: empty module name")
		}
		job.Module = c.String("m")
		if appPath, err = moduleProgram(&job, c.Bool("P")); err != nil {
			return job, "", err
		}
	case len(args) == 0 && console.IsTerminal(c.App.Reader):
		job.Interactive = true // python3 with no script, on a terminal: the REPL
	case len(args) == 0 || args[0] == "-":
		code, err := readText(c.App.Reader, "stdin", 0)
		if err != nil {
			return job, "", err
		}
		job.Code, job.Filename, stdinUsed = code, "<stdin>", true
		if len(args) > 0 {
			args = args[1:]
		}
	default:
		if appPath, err = scriptProgram(&job, args[0], c.Bool("P")); err != nil {
			return job, "", err
		}
		args = args[1:]
	}
	job.Args = args
	if job.Code == "" && job.Module == "" && !job.Interactive && job.App == nil {
		job.Code = "\n" // an empty script is valid Python: it does nothing
	}
	switch in := c.String("stdin"); in {
	case "-":
		if !stdinUsed {
			job.Stdin = c.App.Reader
		} else if c.IsSet("stdin") {
			return job, "", usageErr("--stdin -: stdin already holds the script")
		}
	case "":
		return job, "", usageErr("--stdin: give a FILE, or - for wasmpy's own stdin")
	default:
		b, err := readFile(in)
		if err != nil {
			return job, "", err
		}
		job.Stdin = bytes.NewReader(b)
	}
	return job, appPath, nil
}

// programCode is what a record hashes as the code of an exec: the code,
// or "-m MODULE". The inputs hash covers the arguments only: stdin may be a
// terminal, streamed.
func programCode(job wasmpy.Job) string {
	if job.Module != "" {
		return "-m " + job.Module
	}
	return job.Code
}

func nonNilArgs(args []string) []string {
	if args == nil {
		return []string{}
	}
	return args
}

// grants reads --grant. The CLI grants every built-in by default: its user
// is the script's author, and --workspace and --llm-base-url already say
// what the capabilities reach.
func grants(list string) ([]wasmpy.Capability, error) {
	switch strings.TrimSpace(list) {
	case "all":
		return wasmpy.Builtins(), nil
	case "none":
		return nil, nil
	}
	var g []wasmpy.Capability
	for _, name := range strings.Split(list, ",") {
		c := wasmpy.Capability(strings.TrimSpace(name))
		if c == wasmpy.HTTPRequest {
			return nil, usageErr("--grant: http_request is granted with the hosts it may reach: --allow-http HOST")
		}
		if !slices.Contains(wasmpy.Builtins(), c) {
			names := make([]string, 0, 6)
			for _, b := range wasmpy.Builtins() {
				names = append(names, string(b))
			}
			return nil, usageErr("--grant: no capability %q (want all, none, or some of %s)", c, strings.Join(names, ", "))
		}
		g = append(g, c)
	}
	return g, nil
}

// readFile reads code or input named on the command line: a regular file
// or a stream (a pipe such as <(...)), at most maxInput bytes.
func readFile(path string) ([]byte, error) {
	f, _, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := f.ReadAll()
	if err != nil {
		return nil, usageErr("%v", err)
	}
	return b, nil
}

// openFile opens code or input to read (see readFile) and returns its size
// (0: a stream).
func openFile(path string) (*hostfile.File, int64, error) {
	f, err := hostfile.OpenInput(path, maxInput)
	if err != nil {
		return nil, 0, usageErr("%v", err)
	}
	return f, f.Size(), nil
}

// readText reads code into a string without a second copy: a large script
// costs its size once in the CLI, not the two or three times of a growing
// buffer converted to a string. size is a hint (0: unknown).
func readText(r io.Reader, name string, size int64) (string, error) {
	var b strings.Builder
	b.Grow(int(min(max(size, 0), maxInput)) + 1)
	if _, err := io.Copy(&b, io.LimitReader(r, maxInput+1)); err != nil {
		return "", usageErr("%s: %v", name, unwrap(err))
	}
	if b.Len() > maxInput {
		return "", usageErr("%s: larger than %d MiB", name, maxInput>>20)
	}
	return b.String(), nil
}

func readAll(r io.Reader, name string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, usageErr("%s: %v", name, unwrap(err))
	}
	if len(b) > maxInput {
		return nil, usageErr("%s: larger than %d MiB", name, maxInput>>20)
	}
	return b, nil
}

func unwrap(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// report prints a result: JSON, or, the output having streamed already,
// why the sandbox stopped the run and what it gave submit_result, on a
// line of its own.
func report(c *cli.Context, res *wasmpy.Result, atLineStart bool) error {
	w, ew := c.App.Writer, c.App.ErrWriter
	if c.Bool("json") {
		if err := console.WriteIndented(w, res); err != nil {
			return err
		}
	} else {
		newline := func() {
			if !atLineStart {
				io.WriteString(ew, "\n")
				atLineStart = true
			}
		}
		if e := res.Error; e != nil && e.Kind != wasmpy.KindException && e.Kind != wasmpy.KindSyntax &&
			e.Kind != wasmpy.KindExit && !(e.Kind == wasmpy.KindInterrupted && e.Type != "") {
			newline()
			fmt.Fprintf(ew, "wasmpy: %s\n", console.Clean(e.Message))
		}
		if len(res.Output) > 0 && string(res.Output) != "null" {
			newline()
			fmt.Fprintf(ew, "wasmpy: submit_result: %s\n", console.Clean(string(res.Output)))
		}
	}
	if res.ExitCode != 0 {
		return exitStatus(res.ExitCode)
	}
	return nil
}
