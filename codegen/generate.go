package codegen

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/internal/clip"
	"github.com/wasmpy/wasmpy/internal/pyname"
	"github.com/wasmpy/wasmpy/llm"
	"github.com/wasmpy/wasmpy/tiers"
)

// Defaults of Options.
const (
	DefaultAttempts   = 3
	DefaultLLMRetries = 4
	DefaultBackoff    = time.Second
	DefaultMaxBackoff = 30 * time.Second
)

// Options configure a Generator. The zero value works: three attempts, the
// default import allowlist and forbidden names, a required result, no cache.
type Options struct {
	// Model is sent with every request ("" = the LLM client's Model; one of
	// them must be set). It is part of the cache key, with the client's
	// base URL.
	Model string
	// Temperature is sent with every request (nil = the server's default).
	Temperature *float64
	// Attempts is how many replies to ask the LLM for before giving up
	// (0 = DefaultAttempts). Code from the cache is tried first, as an extra.
	Attempts int
	// AllowImports are the only modules generated code may import (nil =
	// DefaultAllowImports(); empty = none).
	AllowImports []string
	// ForbiddenNames are builtins generated code may not use (nil =
	// DefaultForbiddenNames()).
	ForbiddenNames []string
	// Validation is how strict validation is ("" = tiers.Strict): a trust
	// tier's choice.
	Validation tiers.Strictness
	// Policy, when set, shapes every run of generated code and its tests
	// (a trust tier's Apply: narrower limits, grants and imports). The
	// prompts name the capabilities it leaves granted, and only those.
	Policy func(wasmpy.Job) wasmpy.Job
	// ResultOptional lets Task's code end without calling submit_result.
	ResultOptional bool
	// TaskTemplate and FunctionTemplate, if set, override some or all of the
	// embedded prompt templates (see TaskTemplate()): text/template source
	// that {{define}}s "system", "user" or "retry".
	TaskTemplate, FunctionTemplate string
	// CacheDir holds the code that worked, keyed by a hash of the task (or
	// signature), the model and the templates; "" disables the cache.
	CacheDir string
	// DryRun validates the code but does not run it.
	DryRun bool
	// Limits bound each run of the generated code (zero fields: the
	// sandbox's). Workspace is those runs' workspace ("" = the sandbox's).
	// Those runs are granted every built-in capability, as the prompts
	// promise (wasmpy.Builtins), plus the sandbox's Config.Grants; what the
	// built-ins reach is the sandbox's (its workspace, its LLM).
	Limits    wasmpy.Limits
	Workspace string
	// LLMRetries is how often a retryable LLM failure (429, 408, 5xx, a
	// network error, a timeout) is retried before the generation fails
	// (0 = DefaultLLMRetries; negative = never). These retries do not count
	// as attempts.
	LLMRetries int
	// Backoff is the delay before the first such retry (0 = DefaultBackoff),
	// doubled for each next one up to MaxBackoff (0 = DefaultMaxBackoff),
	// with jitter: each delay is drawn from [d/2, d].
	Backoff, MaxBackoff time.Duration
	// Tests asks the model for unittest tests with each function (Function
	// only). They run in the sandbox with the signature's doctest examples
	// (which run whatever Tests says); a failing test fails the attempt.
	Tests bool
	// MinQuality is what a function must reach (Function only): an attempt
	// below it fails, with the shortfall as feedback.
	MinQuality QualityBar
	// Style is the code template Function renders the final function with:
	// "typed" (the default: annotations kept, Args with types) or "simple".
	Style string
	// CodeTemplate, if set, overrides some or all of the embedded code
	// templates (see CodeTemplate()): text/template source that {{define}}s
	// "typed", "simple" or "tests".
	CodeTemplate string
	// Progress, if set, hears what the generation is doing, so that a
	// caller can show that it is waiting and why. It is called from the
	// goroutine of Task or Function.
	Progress func(Progress)
}

// Steps of a Progress.
const (
	StepAsking     = "asking"     // a request to the LLM is on its way
	StepRetrying   = "retrying"   // a request failed and is retried after a delay (Retry)
	StepValidating = "validating" // the code is checked
	StepTesting    = "testing"    // a function's tests run (Function)
	StepRunning    = "running"    // the code runs
)

// Progress is one step of a generation.
type Progress struct {
	Step     string
	Attempt  int           // 1-based; the cache's code is attempt 1 when there is some
	Attempts int           // the most attempts there can be
	Retry    *llm.Retrying // for StepRetrying
}

// Generator turns tasks and signatures into validated code that runs in a
// sandbox. It is safe for concurrent use.
type Generator struct {
	sb       *wasmpy.Sandbox
	llm      *llm.Client
	opts     Options
	task     *prompts
	function *prompts
	code     *prompts
	cache    *codeCache
}

// New returns a Generator that asks client for code and validates and runs it
// in sb. The error is for bad Options.
func New(sb *wasmpy.Sandbox, client *llm.Client, opts Options) (*Generator, error) {
	if sb == nil || client == nil {
		return nil, errors.New("codegen: New needs a sandbox and an LLM client")
	}
	if opts.Attempts < 0 {
		return nil, fmt.Errorf("codegen: Attempts must not be negative, got %d", opts.Attempts)
	}
	switch opts.Style {
	case "":
		opts.Style = "typed"
	case "typed", "simple":
	default:
		return nil, fmt.Errorf("codegen: Style %q: want typed or simple", opts.Style)
	}
	if opts.MinQuality.MaxComplexity < 0 || opts.MinQuality.MaxLines < 0 || opts.MinQuality.MinTests < 0 {
		return nil, errors.New("codegen: MinQuality's numbers must not be negative")
	}
	if opts.Backoff < 0 || opts.MaxBackoff < 0 {
		return nil, errors.New("codegen: Backoff and MaxBackoff must not be negative")
	}
	if opts.Attempts == 0 {
		opts.Attempts = DefaultAttempts
	}
	if opts.Model == "" {
		opts.Model = client.Model()
	}
	if opts.Model == "" {
		return nil, ErrNoModel
	}
	switch {
	case opts.LLMRetries == 0:
		opts.LLMRetries = DefaultLLMRetries
	case opts.LLMRetries < 0:
		opts.LLMRetries = 0
	}
	if opts.Backoff == 0 {
		opts.Backoff = DefaultBackoff
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.AllowImports == nil {
		opts.AllowImports = DefaultAllowImports()
	}
	for _, m := range opts.AllowImports {
		if !pyname.IsIdentifier(m) {
			return nil, fmt.Errorf("codegen: AllowImports: %q is not a module name", m)
		}
	}
	opts.AllowImports = slices.Clone(opts.AllowImports)
	if opts.ForbiddenNames == nil {
		opts.ForbiddenNames = DefaultForbiddenNames()
	}
	opts.ForbiddenNames = slices.Clone(opts.ForbiddenNames)
	if !slices.Contains(tiers.Strictnesses(), opts.Validation) && opts.Validation != "" {
		return nil, fmt.Errorf("codegen: Validation: %q is not a strictness (want %s, %s or %s)", opts.Validation, tiers.Strict, tiers.Standard, tiers.Syntax)
	}
	g := &Generator{sb: sb, llm: client, opts: opts}
	var err error
	if g.task, err = parsePrompts("task", taskTemplate, opts.TaskTemplate); err != nil {
		return nil, err
	}
	if g.function, err = parsePrompts("function", functionTemplate, opts.FunctionTemplate); err != nil {
		return nil, err
	}
	if g.code, err = parseCode(opts.CodeTemplate); err != nil {
		return nil, err
	}
	if opts.CacheDir != "" {
		g.cache = &codeCache{dir: opts.CacheDir}
	}
	return g, nil
}

// Outcomes of an Attempt, beside the kinds of a failed run (wasmpy.KindException,
// wasmpy.KindTimeout, ...).
const (
	OutcomeOK            = "ok"             // ran and, if required, submitted a result
	OutcomeValidated     = "validated"      // valid; a dry run does not run it
	OutcomeInvalid       = "invalid"        // validation found problems (Findings)
	OutcomeMissingResult = "missing_result" // ran without calling submit_result
	OutcomeNoTests       = "no_tests"       // Options.Tests, and the reply held none
	OutcomeTestsFailed   = "tests_failed"   // a test failed (Tests)
	OutcomeLowQuality    = "low_quality"    // below Options.MinQuality (Quality.Problems)
)

// Attempt is one piece of code tried: where it came from, what validation
// found, and how its run ended.
type Attempt struct {
	Source     string        `json:"source"` // "llm" or "cache"
	Code       string        `json:"code"`
	Findings   []Finding     `json:"findings"`
	Outcome    string        `json:"outcome"`
	Error      *wasmpy.Error `json:"error,omitempty"`    // the run's, when it failed
	Feedback   string        `json:"feedback,omitempty"` // what the model was told of the failure
	LLMRetries int           `json:"llm_retries"`        // retried transport failures before the reply
	Tokens     int           `json:"tokens"`             // the reply's total tokens, as the server counts them
	// Function's: the model's tests, how they ended, and the grades.
	TestCode string       `json:"test_code,omitempty"`
	Tests    []TestResult `json:"tests,omitempty"`
	Quality  *Quality     `json:"quality,omitempty"`
}

// Summary describes the attempt's outcome in one line.
func (a *Attempt) Summary() string {
	switch {
	case a.Outcome == OutcomeInvalid && len(a.Findings) > 0:
		return fmt.Sprintf("%s: %s", a.Outcome, a.Findings[0])
	case a.Outcome == OutcomeLowQuality && a.Quality != nil && len(a.Quality.Problems) > 0:
		return fmt.Sprintf("%s: %s", a.Outcome, a.Quality.Problems[0])
	case a.Outcome == OutcomeTestsFailed:
		var failed []string
		for _, t := range a.Tests {
			if t.Outcome == TestFailed || t.Outcome == TestError {
				failed = append(failed, t.Name)
			}
		}
		if len(failed) == 0 { // the tests did not load
			return fmt.Sprintf("%s: %s", a.Outcome, strings.SplitN(a.Feedback, "\n", 2)[0])
		}
		return fmt.Sprintf("%s: %d of %d failed: %s", a.Outcome, len(failed), len(a.Tests), strings.Join(failed, ", "))
	case a.Error != nil && a.Error.Type != "":
		return fmt.Sprintf("%s: %s: %s", a.Outcome, a.Error.Type, a.Error.Message)
	case a.Error != nil:
		return fmt.Sprintf("%s: %s", a.Outcome, a.Error.Message)
	}
	return a.Outcome
}

// Report is what a generation did.
type Report struct {
	// Code is the last attempt's code: the one that worked, or the last to fail.
	Code string `json:"code"`
	// Cached says the code that worked came from the cache.
	Cached bool `json:"cached"`
	// Result is the last attempt's run: nil when it did not run (a dry run,
	// or code that failed validation).
	Result *wasmpy.Result `json:"-"`
	// Attempts lists every attempt, in order.
	Attempts []Attempt `json:"attempts"`
}

// ErrNoModel is New's error when neither Options.Model nor the LLM client
// names a model: the code cache could not tell models' code apart.
var ErrNoModel = errors.New("codegen: no model set")

// ErrGaveUp is wrapped by the error of a generation whose every attempt failed.
var ErrGaveUp = errors.New("codegen: no attempt succeeded")

// Task asks for a program doing task, validates it, runs it, and retries
// with the failure as feedback. Unless Options.ResultOptional, the program
// must hand its answer back with submit_result: it is in Report.Result.Output.
//
// The Report is returned with the error too, when any attempt was made. The
// error wraps ErrGaveUp when every attempt failed, and *llm.Error
// when the LLM could not be asked.
func (g *Generator) Task(ctx context.Context, task string) (*Report, error) {
	task = strings.TrimSpace(task)
	if task == "" {
		return nil, errors.New("codegen: empty task")
	}
	rules := g.rules()
	if !g.opts.ResultOptional {
		rules.RequireCall = "submit_result"
	}
	return g.generate(ctx, spec{
		kind:    "task",
		prompts: g.task,
		data:    promptData{Task: task, ResultRequired: !g.opts.ResultOptional},
		rules:   rules,
		job: func(code string) wasmpy.Job {
			return g.policy(wasmpy.Job{Code: code, Filename: "generated.py", Limits: g.opts.Limits, Workspace: g.opts.Workspace, Grants: wasmpy.Builtins()})
		},
		requireResult: !g.opts.ResultOptional,
	})
}

// policy applies Options.Policy to a job of generated code.
func (g *Generator) policy(job wasmpy.Job) wasmpy.Job {
	if g.opts.Policy == nil {
		return job
	}
	return g.opts.Policy(job)
}

func (g *Generator) rules() Rules {
	switch g.opts.Validation {
	case tiers.Standard:
		return Rules{ForbiddenNames: g.opts.ForbiddenNames}
	case tiers.Syntax:
		return Rules{}
	}
	return Rules{AllowImports: g.opts.AllowImports, ForbiddenNames: g.opts.ForbiddenNames, ForbidDunder: true}
}

// spec is one generation: what to ask and how to run the answer.
type spec struct {
	kind          string
	prompts       *prompts
	data          promptData
	rules         Rules
	job           func(code string) wasmpy.Job
	requireResult bool
	callNote      string        // prefixed to the feedback of a failed run
	finish        *functionSpec // Function's steps between validation and the run
}

// generate is the loop: the cache, then ask, extract, validate, run, and
// feed the failure back, up to Options.Attempts replies.
func (g *Generator) generate(ctx context.Context, s spec) (*Report, error) {
	s.data.AllowImports, s.data.ForbiddenNames = g.opts.AllowImports, g.opts.ForbiddenNames
	s.data.ResultRequired = s.requireResult
	// The prompt names exactly what a run of the code is granted: what
	// the policy leaves of the built-ins the job asks for.
	s.data.Grants = []string{}
	for _, c := range s.job("").Grants {
		s.data.Grants = append(s.data.Grants, string(c))
	}
	system, err := s.prompts.render("system", s.data)
	if err != nil {
		return nil, err
	}
	user, err := s.prompts.render("user", s.data)
	if err != nil {
		return nil, err
	}
	key := cacheKey(s.kind, g.llm.BaseURL(), g.opts.Model, s.prompts.text, system, user)
	msgs := []llm.Message{{Role: "system", Content: system}, {Role: "user", Content: user}}
	rep := &Report{Attempts: []Attempt{}}
	var history []llm.Message // the last failed exchange, fed back

	// feedback prepares the next request after a failed attempt.
	feedback := func(a *Attempt, reply string, n int) error {
		data := s.data
		data.Attempt, data.Code, data.Problem = n, a.Code, a.Feedback
		retry, err := s.prompts.render("retry", data)
		if err != nil {
			return err
		}
		history = []llm.Message{{Role: "assistant", Content: clip.Head(reply, 64<<10)}, {Role: "user", Content: retry}}
		return nil
	}

	total := g.opts.Attempts
	if e, ok := g.cache.get(key); ok {
		total++
		a := Attempt{Source: "cache", Code: e.Code, TestCode: e.Tests}
		done, err := g.try(ctx, s, &a, rep, total)
		rep.Attempts = append(rep.Attempts, a)
		if err != nil {
			return rep, err
		}
		if done {
			rep.Cached = true
			if a.Outcome == OutcomeOK && e.Verified != "ran" {
				_ = g.cache.put(key, cacheEntry{Kind: s.kind, Model: g.opts.Model, Code: a.Code, Tests: a.TestCode, Verified: "ran"})
			}
			return rep, nil
		}
		g.cache.remove(key)
		reply := "```python\n" + a.Code + "```"
		if a.TestCode != "" {
			reply += "\n\n```python\n" + a.TestCode + "```"
		}
		if err := feedback(&a, reply, len(rep.Attempts)); err != nil {
			return rep, err
		}
	}

	for n := 1; n <= g.opts.Attempts; n++ {
		resp, retries, err := g.chat(ctx, append(slices.Clone(msgs), history...), len(rep.Attempts)+1, total)
		if err != nil {
			return rep, err
		}
		a := Attempt{Source: "llm", LLMRetries: retries, Tokens: resp.Usage.TotalTokens}
		switch {
		case s.finish == nil:
			a.Code = Extract(resp.Content)
		case g.opts.Tests:
			a.Code, a.TestCode = ExtractWithTests(resp.Content)
		default:
			// Tests the model adds unasked are not the function, nor run.
			a.Code, _ = ExtractWithTests(resp.Content)
		}
		done, err := g.try(ctx, s, &a, rep, total)
		rep.Attempts = append(rep.Attempts, a)
		if err != nil {
			return rep, err
		}
		if done {
			verified := "ran"
			if a.Outcome == OutcomeValidated {
				verified = "validated"
			}
			// A cache that cannot be written costs a later LLM call, not this result.
			_ = g.cache.put(key, cacheEntry{Kind: s.kind, Model: g.opts.Model, Code: a.Code, Tests: a.TestCode, Verified: verified})
			return rep, nil
		}
		if err := feedback(&a, resp.Content, len(rep.Attempts)); err != nil {
			return rep, err
		}
	}
	last := rep.Attempts[len(rep.Attempts)-1]
	return rep, fmt.Errorf("%w in %d attempts; the last: %s", ErrGaveUp, len(rep.Attempts), last.Summary())
}

// try validates and (unless a dry run) runs a's code, filling in a's
// outcome; done reports success. The error is for the host's problems.
func (g *Generator) try(ctx context.Context, s spec, a *Attempt, rep *Report, total int) (done bool, err error) {
	n := len(rep.Attempts) + 1
	rep.Code, rep.Result = a.Code, nil
	a.Findings = []Finding{}
	if strings.TrimSpace(a.Code) == "" {
		a.Outcome = OutcomeInvalid
		a.Findings = []Finding{{Line: 1, Rule: "extract", Message: "the reply holds no Python code: reply with the code in one ```python block"}}
		a.Feedback = "The reply held no Python code."
		return false, nil
	}
	g.progress(Progress{Step: StepValidating, Attempt: n, Attempts: total})
	if s.finish != nil {
		done, err := s.finish.finish(ctx, g, a, func(step string) {
			g.progress(Progress{Step: step, Attempt: n, Attempts: total})
		})
		rep.Code = a.Code
		if err != nil || !done {
			return false, err
		}
	} else {
		findings, err := Validate(ctx, g.sb, a.Code, s.rules)
		if err != nil {
			return false, err
		}
		if len(findings) > 0 {
			a.Outcome, a.Findings = OutcomeInvalid, findings
			a.Feedback = "The code did not pass the sandbox's checks:\n" + describeFindings(a.Code, findings)
			return false, nil
		}
	}
	if g.opts.DryRun {
		a.Outcome = OutcomeValidated
		return true, nil
	}
	g.progress(Progress{Step: StepRunning, Attempt: n, Attempts: total})
	res, err := g.sb.Run(ctx, s.job(a.Code))
	if err != nil {
		return false, fmt.Errorf("codegen: running the code: %w", err)
	}
	rep.Result = res
	a.Error = res.Error
	if e := res.Error; e != nil {
		a.Outcome = string(e.Kind)
		a.Feedback = s.callNote + describeFailure(res)
		return false, nil
	}
	if s.requireResult && !submitted(res) {
		a.Outcome = OutcomeMissingResult
		a.Feedback = "It finished without calling submit_result(value). Hand the answer back with submit_result(...), exactly once."
		if out := strings.TrimSpace(res.Stdout); out != "" {
			a.Feedback += "\nIt printed:\n" + clip.Tail(out, 1000)
		}
		return false, nil
	}
	a.Outcome = OutcomeOK
	return true, nil
}

// submitted reports whether a run handed back a result (possibly null).
func submitted(res *wasmpy.Result) bool {
	if len(res.Output) > 0 && string(res.Output) != "null" {
		return true
	}
	for _, c := range res.HostCalls {
		if c.Name == "submit_result" && c.OK {
			return true
		}
	}
	return false
}

// describeFailure words a failed run for the model.
func describeFailure(res *wasmpy.Result) string {
	e := res.Error
	switch e.Kind {
	case wasmpy.KindException, wasmpy.KindSyntax:
		tb := e.Traceback
		if tb == "" {
			tb = e.Type + ": " + e.Message
		}
		return "Running it raised an exception:\n" + clip.Tail(strings.TrimSpace(tb), 3000)
	case wasmpy.KindTimeout:
		return "It ran out of time (" + e.Message + "). Look for an infinite loop or a slow algorithm."
	case wasmpy.KindMemory:
		return "It ran out of memory (" + e.Message + "). Use less memory."
	case wasmpy.KindFuel:
		return "It ran out of its compute budget (" + e.Message + "). Do less work."
	case wasmpy.KindOutput:
		return "It printed more than the output limit allows. Print less."
	case wasmpy.KindExit:
		msg := "It exited with " + e.Message + "."
		if s := strings.TrimSpace(res.Stderr); s != "" {
			msg += " Its stderr:\n" + clip.Tail(s, 2000)
		}
		return msg
	}
	return "The interpreter failed running it (" + e.Message + "); deep recursion can cause this."
}

// chat asks the LLM, retrying retryable failures with exponential backoff
// and jitter. It returns how many retries it made.
func (g *Generator) chat(ctx context.Context, msgs []llm.Message, attempt, attempts int) (*llm.ChatResponse, int, error) {
	g.progress(Progress{Step: StepAsking, Attempt: attempt, Attempts: attempts})
	req := llm.ChatRequest{Messages: msgs, Model: g.opts.Model, Temperature: g.opts.Temperature}
	policy := llm.RetryPolicy{Retries: g.opts.LLMRetries, Backoff: g.opts.Backoff, MaxBackoff: g.opts.MaxBackoff}
	resp, retries, err := g.llm.ChatRetry(ctx, req, policy, func(r llm.Retrying) {
		g.progress(Progress{Step: StepRetrying, Attempt: attempt, Attempts: attempts, Retry: &r})
	})
	switch {
	case err == nil:
		return resp, retries, nil
	case retries > 0:
		return nil, retries, fmt.Errorf("codegen: asking the LLM (%d retries): %w", retries, err)
	}
	return nil, retries, fmt.Errorf("codegen: asking the LLM: %w", err)
}

func (g *Generator) progress(p Progress) {
	if g.opts.Progress != nil {
		g.opts.Progress(p)
	}
}
