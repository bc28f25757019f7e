package runs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/assets"
	"github.com/wasmpy/wasmpy/hostfuncs"
	"github.com/wasmpy/wasmpy/internal/testing/llmtest"
	"github.com/wasmpy/wasmpy/llm"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/skills"
)

// requireCapabilities fails (never skips) when the interpreter cannot make
// host calls: a handler's output travels through submit_result.
func requireCapabilities(t *testing.T, ex *runs.Executor) {
	t.Helper()
	if k := ex.Interpreter().Kind; k != assets.Core {
		t.Fatalf("running skills needs the core interpreter build (make interpreter); the interpreter here is %q", k)
	}
}

// memRecorder keeps records in memory and remembers what Begin saw.
type memRecorder struct {
	mu    sync.Mutex
	began map[string]provenance.Record
	done  map[string]provenance.Record
}

func (m *memRecorder) Begin(_ context.Context, r *provenance.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.began == nil {
		m.began, m.done = map[string]provenance.Record{}, map[string]provenance.Record{}
	}
	m.began[r.ExecutionID] = *r
	return nil
}

func (m *memRecorder) Finish(_ context.Context, r *provenance.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.began[r.ExecutionID]; !ok {
		return errors.New("never begun")
	}
	m.done[r.ExecutionID] = *r
	return nil
}

func (m *memRecorder) Get(_ context.Context, id string) (*provenance.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.done[id]; ok {
		return &r, nil
	}
	if r, ok := m.began[id]; ok {
		return &r, nil
	}
	return nil, provenance.ErrNotFound
}

var (
	recExecOnce sync.Once
	recExec     *runs.Executor
	recorder    = &memRecorder{}
)

// recordingExecutor shares the interpreter cache with testExecutor but
// records provenance in memory.
func recordingExecutor(t *testing.T) (*runs.Executor, *memRecorder) {
	t.Helper()
	var err error
	recExecOnce.Do(func() {
		recExec, err = runs.NewExecutor(context.Background(), runs.ExecutorConfig{
			Sandbox: wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER")}, Store: recorder})
	})
	require.NoError(t, err)
	require.NotNil(t, recExec)
	requireCapabilities(t, recExec)
	return recExec, recorder
}

func loadDir(t *testing.T, ex *runs.Executor, dir string) *skills.Registry {
	t.Helper()
	reg, err := skills.LoadDir(context.Background(), dir, skills.LoadOptions{Checker: ex.Checker()})
	require.NoError(t, err)
	require.Empty(t, reg.Problems())
	return reg
}

func execute(t *testing.T, ex *runs.Executor, reg *skills.Registry, name, args string, approved bool) (*runs.Execution, error) {
	t.Helper()
	s, ok := reg.Get(name)
	require.True(t, ok, name)
	return ex.Execute(context.Background(), s, runs.Request{Args: json.RawMessage(args), ActorID: "tester", ActorType: "test", Approved: approved})
}

const article = `The city council approved the new transit plan on Tuesday. The plan adds three bus lines and extends the tram network to the airport.
Council members said the transit plan would cut commute times for thousands of residents. Critics argued the plan costs too much.
The weather was pleasant. Construction of the new tram lines starts next spring, and the bus lines open in the autumn.
Funding for the transit plan comes from a regional tax approved by voters last year.`

func TestExampleSkills(t *testing.T) {
	ex, _ := recordingExecutor(t)
	reg := loadDir(t, ex, filepath.Join("..", "skills", "examples"))

	t.Run("text_summarize", func(t *testing.T) {
		for _, style := range []string{"concise", "detailed", "bullet-points"} {
			args, _ := json.Marshal(map[string]any{"text": article, "max_sentences": 3, "style": style})
			x, err := execute(t, ex, reg, "text_summarize", string(args), false)
			require.NoError(t, err)
			require.Nil(t, x.Error, "%+v\n%s", x.Error, x.Result.Stderr)
			var out struct {
				Summary          string  `json:"summary"`
				CompressionRatio float64 `json:"compression_ratio"`
				OriginalLength   int     `json:"original_length"`
				SummaryLength    int     `json:"summary_length"`
			}
			require.NoError(t, json.Unmarshal(x.Result.Output, &out))
			require.Equal(t, len([]rune(article)), out.OriginalLength)
			require.Equal(t, len([]rune(out.Summary)), out.SummaryLength)
			require.Greater(t, out.CompressionRatio, 0.0)
			require.Less(t, out.CompressionRatio, 0.8, style)
			require.Contains(t, out.Summary, "transit plan", "the most frequent content words win")
			require.NotContains(t, out.Summary, "weather", "an off-topic sentence scores low")
			if style == "bullet-points" {
				require.True(t, strings.HasPrefix(out.Summary, "- "), out.Summary)
			}
		}
		// A too-large max_sentences still gives at most the whole text.
		x, err := execute(t, ex, reg, "text_summarize", `{"text": "One sentence only.", "max_sentences": 10}`, false)
		require.NoError(t, err)
		require.Nil(t, x.Error)
		require.JSONEq(t, `{"summary": "One sentence only.", "compression_ratio": 1, "original_length": 18, "summary_length": 18}`, string(x.Result.Output))
	})

	t.Run("extract_entities", func(t *testing.T) {
		text := "Contact Dr. Jane Smith at jane.smith@example.com or +1 (555) 123-4567 before March 15, 2024. " +
			"Acme Widgets Inc. paid $2,500,000 to the University of Cambridge on 2024-01-15. See https://example.org/report."
		args, _ := json.Marshal(map[string]any{"text": text})
		x, err := execute(t, ex, reg, "extract_entities", string(args), false)
		require.NoError(t, err)
		require.Nil(t, x.Error, "%+v\n%s", x.Error, x.Result.Stderr)
		var out struct {
			Entities []struct {
				Text       string  `json:"text"`
				Type       string  `json:"type"`
				Start      int     `json:"start"`
				End        int     `json:"end"`
				Confidence float64 `json:"confidence"`
			} `json:"entities"`
			Total  int            `json:"total_entities"`
			Counts map[string]int `json:"entity_counts"`
		}
		require.NoError(t, json.Unmarshal(x.Result.Output, &out))
		found := map[string]string{}
		for _, e := range out.Entities {
			found[e.Text] = e.Type
			require.Equal(t, e.Text, string([]rune(text)[e.Start:e.End]), "positions are character offsets")
			require.Greater(t, e.Confidence, 0.0)
		}
		require.Equal(t, map[string]string{
			"Dr. Jane Smith": "PERSON", "jane.smith@example.com": "EMAIL", "+1 (555) 123-4567": "PHONE",
			"March 15, 2024": "DATE", "Acme Widgets Inc.": "ORGANIZATION", "$2,500,000": "MONEY",
			"University of Cambridge": "ORGANIZATION", "2024-01-15": "DATE", "https://example.org/report": "URL",
		}, found)
		require.Equal(t, len(out.Entities), out.Total)
		require.Equal(t, map[string]int{"PERSON": 1, "EMAIL": 1, "PHONE": 1, "DATE": 2, "ORGANIZATION": 2, "MONEY": 1, "URL": 1}, out.Counts)

		x, err = execute(t, ex, reg, "extract_entities", `{"text": "mail bob@example.org on 2024-02-03", "entity_types": ["EMAIL"]}`, false)
		require.NoError(t, err)
		require.JSONEq(t, `{"entities": [{"text": "bob@example.org", "type": "EMAIL", "start": 5, "end": 20, "confidence": 0.95}],
			"total_entities": 1, "entity_counts": {"EMAIL": 1}}`, string(x.Result.Output))
	})
}

// compact_memory, the classic spec's memory skill, through the sandbox.
func TestCompactMemory(t *testing.T) {
	ex, _ := recordingExecutor(t)
	reg := loadDir(t, ex, filepath.Join("..", "skills", "examples"))
	var arts []map[string]any
	for i := range 20 {
		typ := "note"
		if i%3 == 0 {
			typ = "observation"
		}
		arts = append(arts, map[string]any{"id": fmt.Sprint("a", i), "type": typ, "importance": float64(i%5) / 4,
			"content": fmt.Sprintf("Item %d was seen at the dock. The crane moved it twice that morning. Nobody signed for it.", i)})
	}
	arts = append(arts, arts[4]) // a duplicate
	type result struct {
		Compacted        []map[string]any `json:"compacted_artifacts"`
		CompressionRatio float64          `json:"compression_ratio"`
		OriginalCount    int              `json:"original_count"`
		CompactedCount   int              `json:"compacted_count"`
		OriginalTokens   int              `json:"original_tokens"`
		CompactedTokens  int              `json:"compacted_tokens"`
		StrategyUsed     string           `json:"strategy_used"`
	}
	run := func(t *testing.T, strategy string, maxTokens int, preserve []string) result {
		in := map[string]any{"artifacts": arts, "strategy": strategy, "max_tokens": maxTokens}
		if preserve != nil {
			in["preserve_fields"] = preserve
		}
		args, _ := json.Marshal(in)
		x, err := execute(t, ex, reg, "compact_memory", string(args), false)
		require.NoError(t, err)
		require.Nil(t, x.Error, "%+v\n%s", x.Error, x.Result.Stderr)
		var out result
		require.NoError(t, json.Unmarshal(x.Result.Output, &out))
		require.Equal(t, strategy, out.StrategyUsed)
		require.Equal(t, 21, out.OriginalCount)
		require.Equal(t, len(out.Compacted), out.CompactedCount)
		if preserve == nil { // preserved fields may not fit
			require.LessOrEqual(t, out.CompactedTokens, maxTokens, "%s fits the budget", strategy)
		}
		require.InDelta(t, float64(out.CompactedTokens)/float64(out.OriginalTokens), out.CompressionRatio, 0.0001)
		for _, a := range out.Compacted {
			require.Regexp(t, `^a\d+$`, a["id"], "preserved fields are never changed")
			require.Contains(t, []any{"note", "observation"}, a["type"])
		}
		return out
	}
	t.Run("truncate keeps the most recent", func(t *testing.T) {
		out := run(t, "truncate", 300, nil)
		require.Less(t, out.CompactedCount, 21)
		require.Equal(t, "a4", out.Compacted[len(out.Compacted)-1]["id"], "the last artifact is kept")
		require.Equal(t, arts[20]["content"], out.Compacted[len(out.Compacted)-1]["content"], "whole")
	})
	t.Run("summarize keeps every artifact", func(t *testing.T) {
		out := run(t, "summarize", 600, nil)
		require.Equal(t, 21, out.CompactedCount)
		require.Less(t, len(out.Compacted[0]["content"].(string)), len(arts[0]["content"].(string)))
	})
	t.Run("merge joins neighbours and drops duplicates", func(t *testing.T) {
		out := run(t, "merge", 100000, nil)
		require.Equal(t, 14, out.CompactedCount, "20 artifacts in 14 runs of one type; the duplicate joins its run")
		require.EqualValues(t, 2, out.Compacted[1]["merged_count"])
		require.Contains(t, out.Compacted[1]["content"], "Item 2 was seen")
	})
	t.Run("intelligent drops the least important first", func(t *testing.T) {
		out := run(t, "intelligent", 300, nil)
		require.Less(t, out.CompactedCount, 20)
		for _, a := range out.Compacted {
			require.NotEqual(t, 0.0, a["importance"], "importance 0 goes first")
		}
	})
	t.Run("preserve_fields", func(t *testing.T) {
		out := run(t, "summarize", 300, []string{"id", "type", "content"})
		require.Equal(t, arts[0]["content"], out.Compacted[0]["content"], "a preserved text is not cut")
		require.Greater(t, out.CompactedTokens, 300, "even when the budget is not met")
	})
	t.Run("a budget already met changes nothing", func(t *testing.T) {
		out := run(t, "intelligent", 100000, nil)
		require.Equal(t, 20, out.CompactedCount, "only the duplicate goes")
	})
}

func TestExecuteInputSchema(t *testing.T) {
	ex, rec := recordingExecutor(t)
	reg := loadDir(t, ex, filepath.Join("..", "testdata", "skills"))
	for _, tc := range []struct {
		name, args, pointer, msg string
	}{
		{"wrong type", `{"message": 5}`, "/message", "want string"},
		{"missing required", `{}`, "", "missing property 'message'"},
		{"nested", `{"message": "x", "nested": {"n": "one"}}`, "/nested/n", "want integer"},
		{"extra key", `{"message": "x", "colour": "red"}`, "", "additional properties 'colour' not allowed"},
		{"minimum", `{"message": "x", "count": -1}`, "/count", "minimum"},
		{"not an object", `[1]`, "", "want object"},
		{"not JSON", `{"message": `, "", ""},
		{"duplicate key", `{"message": "a", "message": "b"}`, "", "duplicate key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(rec.began)
			_, err := execute(t, ex, reg, "echo", tc.args, false)
			var se *skills.Error
			require.ErrorAs(t, err, &se)
			require.Equal(t, runs.CodeInvalidInput, se.Code)
			require.Contains(t, se.Message, tc.msg)
			if tc.pointer != "" || tc.msg != "" && tc.name != "duplicate key" {
				require.NotNil(t, se.Pointer)
				require.Equal(t, tc.pointer, *se.Pointer, se.Message)
				require.Equal(t, tc.pointer, se.Violations[0].Pointer)
			}
			require.Equal(t, before, len(rec.began), "a refused request runs nothing and records nothing")
		})
	}
}

func TestExecuteOutcomes(t *testing.T) {
	ex, rec := recordingExecutor(t)
	reg := loadDir(t, ex, filepath.Join("..", "testdata", "skills"))

	t.Run("invalid output", func(t *testing.T) {
		x, err := execute(t, ex, reg, "bad_output", `{}`, false)
		require.NoError(t, err)
		require.Equal(t, runs.CodeInvalidOutput, x.Error.Code)
		require.Equal(t, "/count", *x.Error.Pointer)
		require.Contains(t, x.Error.Message, "want integer")
		require.Equal(t, provenance.OutcomeInvalidOutput, x.Record.Outcome)
		require.JSONEq(t, `{"count": "three"}`, string(x.Result.Output), "the bad output is still shown")
		h, _ := provenance.Hash(x.Result.Output)
		require.Equal(t, h, x.Record.OutputsHash)
	})
	t.Run("output not JSON", func(t *testing.T) {
		x, err := execute(t, ex, reg, "not_json", `{}`, false)
		require.NoError(t, err)
		require.Equal(t, runs.CodeInvalidOutput, x.Error.Code)
		require.Contains(t, x.Error.Message, "not JSON")
		require.Equal(t, provenance.OutcomeInvalidOutput, x.Record.Outcome)
		require.Empty(t, x.Record.OutputsHash)
	})
	t.Run("approval", func(t *testing.T) {
		_, err := execute(t, ex, reg, "needs_approval", `{"target": "prod"}`, false)
		var se *skills.Error
		require.ErrorAs(t, err, &se)
		require.Equal(t, runs.CodeApprovalRequired, se.Code)
		x, err := execute(t, ex, reg, "needs_approval", `{"target": "prod"}`, true)
		require.NoError(t, err)
		require.Nil(t, x.Error)
		require.True(t, x.Record.Approved)
	})

	dir := t.TempDir()
	files := goodSkill("fails")
	files["handler.py"] = "def run(x):\n    raise ValueError('secret input %d' % x)\n"
	writeSkill(t, filepath.Join(dir, "fails"), files)
	files = goodSkill("slow")
	files["skill.yaml"] += "limits:\n  timeout: 300ms\n"
	files["handler.py"] = "def run(x):\n    while True:\n        pass\n"
	writeSkill(t, filepath.Join(dir, "slow"), files)
	files = goodSkill("greedy")
	files["skill.yaml"] += "limits:\n  memory: 32MiB\n"
	files["handler.py"] = "def run(x):\n    return {'b': len(bytearray(x << 20))}\n"
	writeSkill(t, filepath.Join(dir, "greedy"), files)
	reg2 := loadDir(t, ex, dir)

	t.Run("exception", func(t *testing.T) {
		x, err := execute(t, ex, reg2, "fails", `{"x": 42}`, false)
		require.NoError(t, err)
		require.Equal(t, runs.CodeRunFailed, x.Error.Code)
		require.Equal(t, wasmpy.KindException, x.Error.Kind)
		require.Contains(t, x.Error.Message, "ValueError: secret input 42")
		require.Equal(t, string(wasmpy.KindException), x.Record.Outcome)
		require.Equal(t, "ValueError", x.Record.Error, "provenance keeps the class, not the message")
		require.Contains(t, x.Result.Stderr, `File "handler.py", line 2, in run`)
	})
	t.Run("timeout", func(t *testing.T) {
		x, err := execute(t, ex, reg2, "slow", `{"x": 1}`, false)
		require.NoError(t, err)
		require.Equal(t, runs.CodeTimeout, x.Error.Code)
		require.Equal(t, string(wasmpy.KindTimeout), x.Record.Outcome)
		require.Equal(t, int64(300), x.Record.Limits.TimeoutMS)
	})
	t.Run("memory", func(t *testing.T) {
		x, err := execute(t, ex, reg2, "greedy", `{"x": 1}`, false)
		require.NoError(t, err)
		require.Nil(t, x.Error)
		x, err = execute(t, ex, reg2, "greedy", `{"x": 64}`, false)
		require.NoError(t, err)
		require.Equal(t, runs.CodeRunFailed, x.Error.Code)
		require.Equal(t, string(wasmpy.KindMemory), x.Record.Outcome)
		require.Equal(t, uint64(32<<20), x.Record.Limits.MemoryBytes)
	})
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		s, _ := reg.Get("spin")
		go func() {
			for {
				rec.mu.Lock()
				n := 0
				for _, r := range rec.began {
					if r.Skill == "spin" {
						n++
					}
				}
				rec.mu.Unlock()
				if n > 0 {
					cancel()
					return
				}
			}
		}()
		_, err := ex.Execute(ctx, s, runs.Request{})
		require.ErrorIs(t, err, context.Canceled)
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for id, r := range rec.began {
			if r.Skill == "spin" {
				require.Equal(t, provenance.OutcomeCanceled, rec.done[id].Outcome)
			}
		}
	})
}

func TestProvenanceRecord(t *testing.T) {
	ex, rec := recordingExecutor(t)
	reg := loadDir(t, ex, filepath.Join("..", "testdata", "skills"))
	a, err := execute(t, ex, reg, "echo", `{"message": "hi", "count": 2}`, false)
	require.NoError(t, err)
	require.Nil(t, a.Error)
	b, err := execute(t, ex, reg, "echo", "{\"count\": 2.0,\n \"message\": \"h\\u0069\"}", false)
	require.NoError(t, err)
	c, err := execute(t, ex, reg, "echo", `{"message": "hi", "count": 3}`, false)
	require.NoError(t, err)

	r := a.Record
	require.True(t, provenance.ValidID(r.ExecutionID))
	require.NotEqual(t, r.ExecutionID, b.Record.ExecutionID)
	require.Equal(t, provenance.KindSkill, r.Kind)
	require.Equal(t, "echo", r.Skill)
	require.Equal(t, "0.1.0", r.Version)
	require.Equal(t, "tester", r.ActorID)
	require.Equal(t, "test", r.ActorType)
	s, _ := reg.Get("echo")
	require.Equal(t, s.CodeHash, r.CodeHash)
	require.Equal(t, provenance.Interpreter(ex.Interpreter()), r.Interpreter)
	require.Len(t, r.Interpreter.SHA256, 64)
	require.Equal(t, provenance.Limits{TimeoutMS: 10000, MemoryBytes: wasmpy.DefaultLimits().Memory, OutputBytes: wasmpy.DefaultLimits().Output}, r.Limits)
	require.Equal(t, provenance.OutcomeOK, r.Outcome)
	require.Empty(t, r.Error)
	require.Greater(t, r.DurationMS, 0.0)
	require.Greater(t, r.MemoryPeakBytes, uint64(0))
	require.Equal(t, 1, r.HostCallsTotal, "submit_result")
	require.Equal(t, "submit_result", r.HostCalls[0].Name)
	require.NotNil(t, r.FinishedAt)
	require.False(t, r.FinishedAt.Before(r.StartedAt))

	// Equal inputs hash equally whatever their spelling; a change changes the hash.
	require.Equal(t, r.InputsHash, b.Record.InputsHash)
	require.NotEqual(t, r.InputsHash, c.Record.InputsHash)
	want, _ := provenance.Hash([]byte(`{"count":2,"message":"hi"}`))
	require.Equal(t, want, r.InputsHash)
	require.Equal(t, r.OutputsHash, b.Record.OutputsHash)
	require.NotEqual(t, r.OutputsHash, c.Record.OutputsHash)
	out, _ := provenance.Hash(a.Result.Output)
	require.Equal(t, out, r.OutputsHash)

	// The store saw the record running before the run, complete after.
	got, err := ex.Lookup(context.Background(), runs.Caller{}, r.ExecutionID)
	require.NoError(t, err)
	require.Equal(t, r, got)
	_, err = ex.Lookup(context.Background(), runs.Caller{Owner: "token:b0b"}, r.ExecutionID)
	require.ErrorIs(t, err, provenance.ErrNotFound, "another caller's record")
	got, err = ex.Lookup(context.Background(), runs.Caller{Owner: "token:ad1", Admin: true}, r.ExecutionID)
	require.NoError(t, err, "an admin reads every record")
	require.Equal(t, r, got)
	_, err = ex.Lookup(context.Background(), runs.Caller{}, provenance.NewID())
	require.ErrorIs(t, err, provenance.ErrNotFound)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Equal(t, provenance.OutcomeRunning, rec.began[r.ExecutionID].Outcome)
	require.Nil(t, rec.began[r.ExecutionID].FinishedAt)
	require.Equal(t, provenance.OutcomeOK, rec.done[r.ExecutionID].Outcome)
}

func TestExecRawCode(t *testing.T) {
	ex, _ := recordingExecutor(t)
	x, err := ex.Exec(context.Background(), runs.ExecRequest{Code: "import sys\nsubmit_result({'n': len(sys.stdin.read()), 'argv': sys.argv[1:]})", Stdin: "abc", Args: []string{"z"}})
	require.NoError(t, err)
	require.Nil(t, x.Error)
	require.JSONEq(t, `{"n": 3, "argv": ["z"]}`, string(x.Result.Output))
	require.Equal(t, "", x.Record.Skill)
	require.Equal(t, provenance.KindExec, x.Record.Kind)
	require.Equal(t, provenance.HashBytes([]byte("import sys\nsubmit_result({'n': len(sys.stdin.read()), 'argv': sys.argv[1:]})")), x.Record.CodeHash)

	// Raw code gets no workspace and no LLM.
	x, err = ex.Exec(context.Background(), runs.ExecRequest{Code: "read_file('x')"})
	require.NoError(t, err)
	require.Equal(t, runs.CodeRunFailed, x.Error.Code)
	require.Contains(t, x.Error.Message, "PermissionError: capability \"read_file\" is not granted to this run")
}

// One executor serves skills with different grants at once: each run can
// call what its safety flags grant, and nothing else.
func TestGrantsPerSkill(t *testing.T) {
	ex, _ := recordingExecutor(t)
	dir := t.TempDir()
	handler := `def probe():
    out = {}
    for name, call in (("write_file", lambda: write_file("a.txt", "x")), ("ask_llm", lambda: ask_llm("hi"))):
        try:
            call()
            out[name] = "ran"
        except PermissionError as e:
            out[name] = str(e)
        except Exception as e:
            out[name] = type(e).__name__
    return out
`
	schema := `{"input": {"type": "object", "additionalProperties": false}, "output": {"type": "object"}}`
	for name, flags := range map[string]string{"fs_probe": "[file_system]", "pure_probe": "[none]"} {
		d := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "handler.py"), []byte(handler), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(d, "schema.json"), []byte(schema), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(d, "skill.yaml"), []byte("name: "+name+
			"\nversion: 0.1.0\ndescription: Probes its grants.\nhandler: handler.probe\nsafety_flags: "+flags+"\n"), 0o644))
	}
	reg := loadDir(t, ex, dir)
	want := map[string]string{
		"fs_probe":   `{"write_file": "ran", "ask_llm": "capability \"ask_llm\" is not granted to this run"}`,
		"pure_probe": `{"write_file": "capability \"write_file\" is not granted to this run", "ask_llm": "capability \"ask_llm\" is not granted to this run"}`,
	}
	var wg sync.WaitGroup
	for i := range 6 {
		name := []string{"fs_probe", "pure_probe"}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			x, err := execute(t, ex, reg, name, `{}`, false)
			if !assert.NoError(t, err) || !assert.Nil(t, x.Error) {
				return
			}
			assert.JSONEq(t, want[name], string(x.Result.Output), name)
		}()
	}
	wg.Wait()

	_, err := runs.NewExecutor(context.Background(), runs.ExecutorConfig{Sandbox: wasmpy.Config{Grants: []wasmpy.Capability{wasmpy.ReadFile}}})
	require.ErrorIs(t, err, runs.ErrExecutorGrants)
}

// embed_text, the classic embeddings skill, against the fake server: the
// skill carries external_call, so it loads only with an endpoint, and its
// run is granted embed within the LLM budget.
func TestEmbedText(t *testing.T) {
	srv := llmtest.New(t)
	ex, err := runs.NewExecutor(context.Background(), runs.ExecutorConfig{Sandbox: wasmpy.Config{
		Interpreter: os.Getenv("WASMPY_INTERPRETER"), LLM: llm.Config{BaseURL: srv.URL(), Model: "m"},
		LLMBudget: hostfuncs.LLMBudget{MaxTokens: 5}}})
	require.NoError(t, err)
	t.Cleanup(func() { ex.Close(context.Background()) })
	requireCapabilities(t, ex)
	reg, err := skills.LoadDir(context.Background(), filepath.Join("..", "skills", "llm"), skills.LoadOptions{Checker: ex.Checker(), AllowExternalCalls: true})
	require.NoError(t, err)
	require.Empty(t, reg.Problems())
	s, ok := reg.Get("embed_text")
	require.True(t, ok)
	require.Contains(t, s.Grants(), wasmpy.Embed)

	x, err := execute(t, ex, reg, "embed_text", `{"text": "hello world", "normalize": false}`, false)
	require.NoError(t, err)
	require.Nil(t, x.Error, "%+v\n%s", x.Error, x.Result.Stderr)
	var out struct {
		Embedding  []float64 `json:"embedding"`
		Dimension  int       `json:"dimension"`
		ModelUsed  string    `json:"model_used"`
		TextLength int       `json:"text_length"`
	}
	require.NoError(t, json.Unmarshal(x.Result.Output, &out))
	require.Equal(t, llmtest.Embedding("hello world"), out.Embedding)
	require.Equal(t, llmtest.EmbeddingDim, out.Dimension)
	require.Equal(t, "default", out.ModelUsed)
	require.Equal(t, 11, out.TextLength)
	require.Equal(t, "embed", x.Record.HostCalls[0].Name, "provenance shows the call (tool_ids)")

	x, err = execute(t, ex, reg, "embed_text", `{"text": "hello world", "model": "big"}`, false)
	require.NoError(t, err)
	require.Nil(t, x.Error)
	require.NoError(t, json.Unmarshal(x.Result.Output, &out))
	norm := 0.0
	for _, v := range out.Embedding {
		norm += v * v
	}
	require.InDelta(t, 1.0, norm, 1e-9, "normalized by default")
	require.Equal(t, "big", out.ModelUsed)

	// The budget (5 tokens) is per run: the runs above spent 2 each, and
	// this one starts afresh (a call is checked before it is sent, and its
	// tokens spent after).
	x, err = execute(t, ex, reg, "embed_text", `{"text": "a b c d e"}`, false)
	require.NoError(t, err)
	require.Nil(t, x.Error)
	require.Equal(t, 5, x.Result.LLM.TotalTokens)

	// Without an endpoint the skill does not load.
	reg, err = skills.LoadDir(context.Background(), filepath.Join("..", "skills", "llm"), skills.LoadOptions{Checker: ex.Checker()})
	require.NoError(t, err)
	require.Len(t, reg.Problems(), 1)
	require.Contains(t, reg.Problems()[0].Reason, "external_call: refused")
}
