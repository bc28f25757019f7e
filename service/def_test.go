package service_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/internal/testing/llmtest"
	"github.com/wasmpy/wasmpy/llm"
	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/service"
)

// POST /def generates a function with the service's LLM, as `wasmpy def`
// does, and records the generation (kind def) like any run; it is off
// without --enable-exec, and needs an LLM endpoint.
func TestDef(t *testing.T) {
	srv := llmtest.New(t, llmtest.Reply{Content: "```python\ndef mul(a: int, b: int) -> int:\n    return a * b\n```"})
	_, reg, st := fixtures(t)
	ex, err := runs.NewExecutor(context.Background(), runs.ExecutorConfig{Store: st, Sandbox: wasmpy.Config{
		Interpreter: os.Getenv("WASMPY_INTERPRETER"), LLM: llm.Config{BaseURL: srv.URL(), Model: "m"}}})
	require.NoError(t, err)
	t.Cleanup(func() { ex.Close(context.Background()) })
	s := startServer(t, func(c *service.Config) { c.Executor, c.Registry, c.EnableExec = ex, reg, true })

	const sig = `def mul(a: int, b: int) -> int:\n    \"\"\"The product.\"\"\"`
	r := s.do(t, "POST", "/def", `{"signature": "`+sig+`", "args": [6, 7], "actor_id": "agent-7", "actor_type": "agent"}`)
	require.Equal(t, 200, r.status, r.raw)
	require.Equal(t, true, r.body["ok"], r.raw)
	require.Equal(t, 42.0, r.body["value"])
	require.Contains(t, r.body["code"], "return a * b")
	require.Equal(t, "sandbox", r.body["tier"], "generated code's default tier, as the CLI's")
	prov := r.body["provenance"].(map[string]any)
	require.Equal(t, "def", prov["kind"])
	require.Equal(t, "ok", prov["outcome"])
	require.Equal(t, "agent-7", prov["actor_id"])
	require.Equal(t, float64(1), prov["codegen"].(map[string]any)["attempts"])
	rec := s.do(t, "GET", "/executions/"+prov["execution_id"].(string), "")
	require.Equal(t, 200, rec.status)
	require.Equal(t, "def", rec.body["kind"])
	require.Equal(t, prov["code_hash"], rec.body["code_hash"])
	require.Len(t, srv.Requests(), 1)

	// Arguments that do not fit: refused before anything is asked, no record.
	r = s.do(t, "POST", "/def", `{"signature": "`+sig+`", "args": [1, 2, 3]}`)
	require.Equal(t, 400, r.status, r.raw)
	require.Contains(t, r.raw, "do not fit")
	require.Len(t, srv.Requests(), 1)
	r = s.do(t, "POST", "/def", `{"signature": "", "args": []}`)
	require.Equal(t, 400, r.status, r.raw)

	off := startServer(t, func(c *service.Config) { c.Executor, c.Registry = ex, reg })
	require.Equal(t, 404, off.do(t, "POST", "/def", `{"signature": "`+sig+`"}`).status, "off without --enable-exec")
	noLLM := startServer(t, func(c *service.Config) { c.EnableExec = true })
	r = noLLM.do(t, "POST", "/def", `{"signature": "`+sig+`"}`)
	require.Equal(t, 501, r.status, r.raw)
	require.Equal(t, "no_llm", r.errorCode())
}
