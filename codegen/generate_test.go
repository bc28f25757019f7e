package codegen

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/internal/testing/llmtest"
	"github.com/wasmpy/wasmpy/llm"
)

// py fences code as a model would.
func py(code string) llmtest.Reply {
	return llmtest.Reply{Content: "Here is the program:\n\n```python\n" + code + "\n```\n"}
}

const goodTask = "import math\nsubmit_result({'pi': round(math.pi, 2)})"

func newGen(t *testing.T, srv *llmtest.Server, opts Options) *Generator {
	t.Helper()
	if opts.Backoff == 0 {
		opts.Backoff = time.Millisecond
	}
	g, err := New(testSandbox(t), llm.New(llm.Config{BaseURL: srv.URL(), Model: "test-model"}), opts)
	require.NoError(t, err)
	return g
}

// lastMessage is what the model was last told in request i.
func lastMessage(t *testing.T, srv *llmtest.Server, i int) string {
	t.Helper()
	reqs := srv.Requests()
	require.Greater(t, len(reqs), i)
	msgs := reqs[i].Chat.Messages
	return msgs[len(msgs)-1].Content
}

func TestTaskFirstTry(t *testing.T) {
	srv := llmtest.New(t, py(goodTask))
	rep, err := newGen(t, srv, Options{}).Task(context.Background(), "submit pi to two places")
	require.NoError(t, err)
	require.JSONEq(t, `{"pi": 3.14}`, string(rep.Result.Output))
	require.Equal(t, goodTask+"\n", rep.Code)
	require.False(t, rep.Cached)
	require.Len(t, rep.Attempts, 1)
	require.Equal(t, OutcomeOK, rep.Attempts[0].Outcome)
	require.Equal(t, "llm", rep.Attempts[0].Source)
	require.Positive(t, rep.Attempts[0].Tokens)

	req := srv.Requests()[0].Chat
	require.Equal(t, "test-model", req.Model)
	require.Len(t, req.Messages, 2)
	require.Equal(t, "system", req.Messages[0].Role)
	require.Contains(t, req.Messages[0].Content, "submit_result(value)")
	require.Contains(t, req.Messages[0].Content, "Import only these modules: math, cmath, json")
	require.Equal(t, "Task: submit pi to two places", req.Messages[1].Content)
}

// Every failure kind is fed back with the failing code, and the next reply
// is tried.
func TestTaskRetriesEachFailureKind(t *testing.T) {
	for _, tc := range []struct {
		name, bad string
		opts      Options
		outcome   string
		feedback  []string // in the retry message
	}{
		{"validation", "import os\nsubmit_result(os.listdir('/'))", Options{}, OutcomeInvalid,
			[]string{"did not pass the sandbox's checks", "line 1: import of 'os' is not allowed", "    import os"}},
		{"exception", "submit_result(1 / 0)", Options{}, string(wasmpy.KindException),
			[]string{"raised an exception", "ZeroDivisionError: division by zero", `File "generated.py", line 1`}},
		{"timeout", "while True:\n    pass\nsubmit_result(1)", Options{Limits: wasmpy.Limits{Timeout: time.Second}}, string(wasmpy.KindTimeout),
			[]string{"ran out of time", "infinite loop"}},
		{"missing result", "print('the answer is 42')\nif False:\n    submit_result(42)", Options{}, OutcomeMissingResult,
			[]string{"without calling submit_result", "It printed:\nthe answer is 42"}},
		{"result not JSON", "submit_result({1, 2})", Options{}, string(wasmpy.KindException),
			[]string{"not JSON-serializable"}},
		{"no code in the reply", "", Options{}, OutcomeInvalid, []string{"held no Python code"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first := py(tc.bad)
			if tc.bad == "" {
				first = llmtest.Reply{Content: "```json\n{\"answer\": 42}\n```"}
			}
			srv := llmtest.New(t, first, py(goodTask))
			rep, err := newGen(t, srv, tc.opts).Task(context.Background(), "submit pi")
			require.NoError(t, err)
			require.Len(t, rep.Attempts, 2)
			require.Equal(t, tc.outcome, rep.Attempts[0].Outcome, rep.Attempts[0].Feedback)
			require.Equal(t, OutcomeOK, rep.Attempts[1].Outcome)
			require.JSONEq(t, `{"pi": 3.14}`, string(rep.Result.Output))

			// The retry carries the whole exchange: system, task, the bad
			// reply, then the feedback with the failing code.
			msgs := srv.Requests()[1].Chat.Messages
			require.Len(t, msgs, 4)
			require.Equal(t, []string{"system", "user", "assistant", "user"}, []string{msgs[0].Role, msgs[1].Role, msgs[2].Role, msgs[3].Role})
			retry := msgs[3].Content
			require.Contains(t, retry, "Attempt 1 failed.")
			for _, want := range tc.feedback {
				require.Contains(t, retry, want)
			}
			if tc.bad != "" {
				require.Contains(t, retry, "```python\n"+tc.bad+"\n```")
			}
		})
	}
}

func TestTaskGivesUp(t *testing.T) {
	srv := llmtest.New(t, py("import socket"), llmtest.Reply{Content: "I cannot do that."})
	rep, err := newGen(t, srv, Options{Attempts: 2}).Task(context.Background(), "open a socket")
	require.ErrorIs(t, err, ErrGaveUp)
	require.ErrorContains(t, err, "in 2 attempts; the last: invalid: line 1: invalid syntax")
	require.Len(t, rep.Attempts, 2)
	require.Equal(t, "import", rep.Attempts[0].Findings[0].Rule)
	require.Equal(t, "syntax", rep.Attempts[1].Findings[0].Rule)
	require.Nil(t, rep.Result, "nothing ran")
	require.Equal(t, 0, srv.Pending())
}

// A 429 and a 503 are retried with backoff; they are not attempts.
func TestLLMBackoff(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Status: 429, Error: "slow down"}, llmtest.Reply{Status: 503}, py(goodTask))
	start := time.Now()
	rep, err := newGen(t, srv, Options{Backoff: 20 * time.Millisecond}).Task(context.Background(), "submit pi")
	require.NoError(t, err)
	require.Len(t, rep.Attempts, 1)
	require.Equal(t, 2, rep.Attempts[0].LLMRetries)
	require.Len(t, srv.Requests(), 3)
	// Delays of [10ms, 20ms] and [20ms, 40ms].
	require.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)
}

func TestLLMErrors(t *testing.T) {
	t.Run("retries run out", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Status: 500}, llmtest.Reply{Status: 502}, llmtest.Reply{Status: 503})
		rep, err := newGen(t, srv, Options{LLMRetries: 2}).Task(context.Background(), "x")
		var ce *llm.Error
		require.ErrorAs(t, err, &ce)
		require.Equal(t, 503, ce.StatusCode)
		require.ErrorContains(t, err, "codegen: asking the LLM (2 retries)")
		require.Len(t, srv.Requests(), 3)
		require.Empty(t, rep.Attempts)
	})
	t.Run("not retryable", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Status: 401, Error: "bad key"}, py(goodTask))
		_, err := newGen(t, srv, Options{}).Task(context.Background(), "x")
		var ce *llm.Error
		require.ErrorAs(t, err, &ce)
		require.Equal(t, 401, ce.StatusCode)
		require.False(t, ce.Retryable)
		require.Len(t, srv.Requests(), 1)
	})
	t.Run("no retries", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Status: 429}, py(goodTask))
		_, err := newGen(t, srv, Options{LLMRetries: -1}).Task(context.Background(), "x")
		require.ErrorContains(t, err, "status 429")
		require.Len(t, srv.Requests(), 1)
	})
	t.Run("not configured", func(t *testing.T) {
		g, err := New(testSandbox(t), llm.New(llm.Config{}), Options{Model: "m"})
		require.NoError(t, err)
		_, err = g.Task(context.Background(), "x")
		require.ErrorIs(t, err, llm.ErrNotConfigured)
	})
	t.Run("canceled during backoff", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Status: 429}, py(goodTask))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		_, err := newGen(t, srv, Options{Backoff: time.Hour, MaxBackoff: time.Hour, Progress: func(p Progress) {
			if p.Step == StepRetrying {
				cancel()
			}
		}}).Task(ctx, "x")
		require.ErrorIs(t, err, context.Canceled)
		require.Len(t, srv.Requests(), 1)
	})
	// A slow server under --timeout 1s: the delay would end past the
	// deadline, so the failure comes at once instead of after the wait.
	t.Run("no backoff past the deadline", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Reply{Status: 503}, py(goodTask))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := newGen(t, srv, Options{Backoff: time.Hour, MaxBackoff: time.Hour}).Task(ctx, "x")
		require.ErrorContains(t, err, "status 503")
		require.NoError(t, ctx.Err())
		require.Len(t, srv.Requests(), 1)
	})
	t.Run("no model", func(t *testing.T) {
		_, err := New(testSandbox(t), llm.New(llm.Config{BaseURL: "http://x/v1"}), Options{})
		require.ErrorIs(t, err, ErrNoModel)
		g, err := New(testSandbox(t), llm.New(llm.Config{BaseURL: "http://x/v1", Model: "m"}), Options{})
		require.NoError(t, err, "the client's model will do")
		require.Equal(t, "m", g.opts.Model)
	})
}

// The same task, model and template give the cached code without asking the
// LLM; code from the cache that fails is fed back and replaced.
func TestTaskCache(t *testing.T) {
	dir := t.TempDir()
	srv := llmtest.New(t, py(goodTask))
	_, err := newGen(t, srv, Options{CacheDir: dir}).Task(context.Background(), "submit pi")
	require.NoError(t, err)
	require.Len(t, srv.Requests(), 1)

	rep, err := newGen(t, srv, Options{CacheDir: dir}).Task(context.Background(), "submit pi")
	require.NoError(t, err)
	require.True(t, rep.Cached)
	require.Len(t, srv.Requests(), 1, "a cache hit asks the LLM nothing")
	require.Equal(t, "cache", rep.Attempts[0].Source)
	require.JSONEq(t, `{"pi": 3.14}`, string(rep.Result.Output))

	// Another model is another key.
	srv.Enqueue(py(goodTask))
	rep, err = newGen(t, srv, Options{CacheDir: dir, Model: "other"}).Task(context.Background(), "submit pi")
	require.NoError(t, err)
	require.False(t, rep.Cached)
	require.Len(t, srv.Requests(), 2)

	// A cached entry that now fails: fed back to the LLM, then replaced.
	entries, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	require.Len(t, entries, 2)
	for _, e := range entries {
		data, err := os.ReadFile(e)
		require.NoError(t, err)
		var ce cacheEntry
		require.NoError(t, json.Unmarshal(data, &ce))
		require.Equal(t, "ran", ce.Verified)
		ce.Code = "submit_result(undefined_name)\n"
		data, _ = json.Marshal(ce)
		require.NoError(t, os.WriteFile(e, data, 0o600))
	}
	srv.Enqueue(py(goodTask))
	rep, err = newGen(t, srv, Options{CacheDir: dir}).Task(context.Background(), "submit pi")
	require.NoError(t, err)
	require.Len(t, rep.Attempts, 2)
	require.Equal(t, "cache", rep.Attempts[0].Source)
	require.Equal(t, string(wasmpy.KindException), rep.Attempts[0].Outcome)
	require.False(t, rep.Cached)
	require.Contains(t, lastMessage(t, srv, 2), "NameError")
	rep, err = newGen(t, srv, Options{CacheDir: dir}).Task(context.Background(), "submit pi")
	require.NoError(t, err)
	require.True(t, rep.Cached, "the working code replaced the failing one")
	require.Len(t, srv.Requests(), 3)
}

// A dry run validates but never runs: this code would fail if it ran.
func TestDryRun(t *testing.T) {
	dir := t.TempDir()
	srv := llmtest.New(t, py("import os"), py("submit_result(1 / 0)"))
	rep, err := newGen(t, srv, Options{DryRun: true, CacheDir: dir}).Task(context.Background(), "divide")
	require.NoError(t, err)
	require.Len(t, rep.Attempts, 2, "validation failures are still retried")
	require.Equal(t, OutcomeValidated, rep.Attempts[1].Outcome)
	require.Equal(t, "submit_result(1 / 0)\n", rep.Code)
	require.Nil(t, rep.Result)

	// The dry run's code is cached: a real run then runs what was shown
	// (and, as it fails, asks the LLM again).
	srv.Enqueue(py("submit_result(2 / 1)"))
	rep, err = newGen(t, srv, Options{CacheDir: dir, Attempts: 1}).Task(context.Background(), "divide")
	require.NoError(t, err)
	require.Len(t, rep.Attempts, 2)
	require.Equal(t, "cache", rep.Attempts[0].Source)
	require.Equal(t, "submit_result(1 / 0)\n", rep.Attempts[0].Code)
	require.Equal(t, string(wasmpy.KindException), rep.Attempts[0].Outcome)
	require.JSONEq(t, "2.0", string(rep.Result.Output))
}

func TestResultOptional(t *testing.T) {
	srv := llmtest.New(t, py("print('hi')"))
	rep, err := newGen(t, srv, Options{ResultOptional: true}).Task(context.Background(), "say hi")
	require.NoError(t, err)
	require.Equal(t, "hi\n", rep.Result.Stdout)
	require.NotContains(t, srv.Requests()[0].Chat.Messages[0].Content, "must call submit_result")
}

func TestTaskWorkspace(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("a b a c a b"), 0o644))
	srv := llmtest.New(t, py("from collections import Counter\nsubmit_result(Counter(read_file('notes.txt').split()).most_common(2))"))
	rep, err := newGen(t, srv, Options{Workspace: dir}).Task(context.Background(), "top 2 words of notes.txt")
	require.NoError(t, err)
	require.JSONEq(t, `[["a", 3], ["b", 2]]`, string(rep.Result.Output))
}

func TestFunction(t *testing.T) {
	sig := "def add(a: int, b: int) -> int:\n    \"\"\"Return a + b.\"\"\""
	srv := llmtest.New(t,
		py("def plus(a, b):\n    return a + b"), // the wrong name
		py("def add(a: int, b: int) -> int:\n    \"\"\"Return a + b.\"\"\"\n    return a + b"))
	g := newGen(t, srv, Options{CacheDir: t.TempDir()})
	fr, err := g.Function(context.Background(), sig, []any{2, 3}, nil)
	require.NoError(t, err)
	require.Equal(t, "add", fr.Name)
	require.JSONEq(t, "5", string(fr.Value))
	require.Contains(t, fr.Code, "return a + b")
	require.NotContains(t, fr.Code, "wasmpy def", "the source is the generated code, without the harness")
	require.Len(t, fr.Attempts, 2)
	require.Equal(t, "function", fr.Attempts[0].Findings[0].Rule)
	require.Contains(t, srv.Requests()[0].Chat.Messages[1].Content, sig)
	require.Contains(t, lastMessage(t, srv, 1), "does not define the function add")

	// The cache is keyed by the signature: new arguments, no new request.
	fr, err = g.Function(context.Background(), sig, nil, map[string]any{"a": "x", "b": "y"})
	require.NoError(t, err)
	require.True(t, fr.Cached)
	require.JSONEq(t, `"xy"`, string(fr.Value))
	require.Len(t, srv.Requests(), 2)
}

// The arguments travel as JSON data, never as source: a string that would
// break out of a literal is just a string.
func TestFunctionArgumentsAreData(t *testing.T) {
	srv := llmtest.New(t, py("def echo(x):\n    return x"))
	evil := "'); import os; ('"
	fr, err := newGen(t, srv, Options{}).Function(context.Background(), "def echo(x):", []any{evil}, nil)
	require.NoError(t, err)
	var got string
	require.NoError(t, json.Unmarshal(fr.Value, &got))
	require.Equal(t, evil, got)
}

func TestFunctionRetryShowsTheCall(t *testing.T) {
	srv := llmtest.New(t,
		py("def mean(xs):\n    return sum(xs) / len(xs[0])"),
		py("def mean(xs):\n    return sum(xs) / len(xs)"))
	fr, err := newGen(t, srv, Options{}).Function(context.Background(), "def mean(xs: list) -> float:", []any{[]int{1, 2, 3}}, nil)
	require.NoError(t, err)
	require.JSONEq(t, "2.0", string(fr.Value))
	retry := lastMessage(t, srv, 1)
	require.Contains(t, retry, "Called as mean(*args, **kwargs) with args = [[1,2,3]] and kwargs = {}")
	require.Contains(t, retry, "TypeError")
	require.Contains(t, srv.Requests()[0].Chat.Messages[0].Content, "Do not print the result")
}

func TestFunctionBadSignature(t *testing.T) {
	srv := llmtest.New(t)
	g := newGen(t, srv, Options{})
	for sig, want := range map[string]string{
		"x = 1":                 "no function",
		"def f(:":               "invalid syntax",
		"async def f(x):":       "async functions are not supported",
		"":                      "bad signature: it is empty",
		"def f(x):\n  return (": "never closed",
	} {
		_, err := g.Function(context.Background(), sig, nil, nil)
		require.ErrorIs(t, err, ErrBadSignature, sig)
		require.ErrorContains(t, err, want, sig)
	}
	_, err := g.Function(context.Background(), "def f(x):", []any{func() {}}, nil)
	require.ErrorContains(t, err, "not JSON")
	require.Empty(t, srv.Requests(), "a bad signature never reaches the LLM")
}

func TestNewOptions(t *testing.T) {
	client := llm.New(llm.Config{})
	sb := testSandbox(t)
	for name, opts := range map[string]Options{
		"negative attempts": {Attempts: -1},
		"bad module":        {AllowImports: []string{"os.path"}},
		"negative backoff":  {Backoff: -time.Second},
		"bad template":      {TaskTemplate: "{{define \"system\"}}{{end"},
	} {
		_, err := New(sb, client, opts)
		require.Error(t, err, name)
		require.True(t, strings.HasPrefix(err.Error(), "codegen: "), err.Error())
	}
	_, err := New(nil, client, Options{})
	require.Error(t, err)
	require.False(t, errors.Is(err, ErrGaveUp))
}
