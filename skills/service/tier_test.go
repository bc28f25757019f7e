package service_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/stores"
	"github.com/wasmpy/wasmpy/skills"
	"github.com/wasmpy/wasmpy/skills/service"
)

// tierServer is a service whose store keeps sessions and a token "limited"
// whose maximum tier is sandbox, beside the operator's token "admin"; its
// skills are echo (no tier: trusted) and held (tier: sandbox).
func tierServer(t *testing.T) *server {
	t.Helper()
	ctx := context.Background()
	st, err := stores.Open(ctx, filepath.Join(t.TempDir(), "p.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	require.NoError(t, st.CreateToken(ctx, &provenance.Token{Name: "ci", Hash: provenance.HashBytes([]byte("limited")), Role: provenance.RoleRunner, MaxTier: "sandbox"}))
	ex, err := skills.NewExecutor(ctx, skills.ExecutorConfig{Sandbox: wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER")},
		Store: st, Sessions: st})
	require.NoError(t, err)
	t.Cleanup(func() { ex.Close(ctx) })
	schema := `{"input": {"type": "object", "properties": {"message": {"type": "string"}}, "additionalProperties": false}, "output": {}}`
	reg, err := skills.Load(ctx, fstest.MapFS{
		"echo/skill.yaml":    {Data: []byte("name: echo\nversion: 1.0.0\ndescription: echoes\nhandler: handler.run\nsafety_flags: [none]\n")},
		"echo/schema.json":   {Data: []byte(schema)},
		"echo/handler.py":    {Data: []byte("import json\ndef run(message=''):\n    return {'message': message}\n")},
		"held/skill.yaml":    {Data: []byte("name: held\nversion: 1.0.0\ndescription: held to sandbox\nhandler: handler.run\nsafety_flags: [none]\ntier: sandbox\n")},
		"held/schema.json":   {Data: []byte(schema)},
		"held/handler.py":    {Data: []byte("def run(message=''):\n    import os\n    return os.sep\n")},
		"reader/skill.yaml":  {Data: []byte("name: reader\nversion: 1.0.0\ndescription: reads\nhandler: handler.run\nsafety_flags: [file_system]\n")},
		"reader/schema.json": {Data: []byte(schema)},
		"reader/handler.py":  {Data: []byte("def run(message=''):\n    return list_files('*')\n")},
	}, skills.LoadOptions{Checker: ex.Checker()})
	require.NoError(t, err)
	require.Empty(t, reg.Problems())
	svc, err := service.New(service.Config{Registry: reg, Executor: ex, EnableExec: true, Tokens: []string{"admin"}, TokenStore: st,
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	srv := httptest.NewServer(svc.Handler())
	t.Cleanup(srv.Close)
	return &server{Server: srv, store: st}
}

// tierOf checks an answer's run and provenance name tier, and that the
// store's record does too.
func tierOf(t *testing.T, s *server, r reply, tier string) map[string]any {
	t.Helper()
	prov := r.body["provenance"].(map[string]any)
	require.Equal(t, tier, prov["tier"], r.raw)
	if run, ok := r.body["run"].(map[string]any); ok {
		require.Equal(t, tier, run["tier"])
	}
	rec, err := s.store.Get(context.Background(), prov["execution_id"].(string))
	require.NoError(t, err)
	require.Equal(t, tier, rec.Tier)
	return prov
}

func TestTiersOverHTTP(t *testing.T) {
	s := tierServer(t)
	admin, limited := []string{"Authorization", "Bearer admin"}, []string{"Authorization", "Bearer limited"}

	// POST /exec: testing by default; a request may ask for another; the
	// tier's limits, grants and imports bind.
	r := s.do(t, "POST", "/exec", `{"code": "import os\nsubmit_result(os.sep)"}`, admin...)
	require.Equal(t, 200, r.status, r.raw)
	prov := tierOf(t, s, r, "testing")
	require.EqualValues(t, 0, prov["limits"].(map[string]any)["fuel"])
	r = s.do(t, "POST", "/exec", `{"code": "import os", "tier": "sandbox"}`, admin...)
	require.Equal(t, 502, r.status, r.raw)
	require.Contains(t, r.raw, "import of 'os' is not allowed")
	prov = tierOf(t, s, r, "sandbox")
	require.EqualValues(t, 1_000_000_000, prov["limits"].(map[string]any)["fuel"])
	require.EqualValues(t, 64<<20, prov["limits"].(map[string]any)["memory_bytes"])
	r = s.do(t, "POST", "/exec", `{"code": "1", "tier": "sandbox", "limits": {"memory_bytes": 134217728}}`, admin...)
	require.Equal(t, 400, r.status, "more than the tier's memory")
	require.Contains(t, r.raw, "limits.memory_bytes: want 1 to 67108864")
	r = s.do(t, "POST", "/exec", `{"code": "1", "tier": "root"}`, admin...)
	require.Equal(t, 400, r.status)
	require.Contains(t, r.raw, `no such tier \"root\" (have sandbox, testing, trusted)`)

	// A token whose maximum is sandbox: a more trusted tier is refused,
	// and a request naming none gets sandbox.
	r = s.do(t, "POST", "/exec", `{"code": "1", "tier": "trusted"}`, limited...)
	require.Equal(t, 403, r.status, r.raw)
	require.Equal(t, "tier_forbidden", r.errorCode())
	require.Contains(t, r.raw, `tier \"trusted\" is above this token's maximum tier \"sandbox\"`)
	r = s.do(t, "POST", "/exec", `{"code": "submit_result(1)"}`, limited...)
	require.Equal(t, 200, r.status, r.raw)
	tierOf(t, s, r, "sandbox")
	require.Equal(t, 401, s.do(t, "POST", "/exec", `{"code": "1"}`, "Authorization", "Bearer nobody").status)

	// Sessions: the tier is chosen when one is made, and every turn has it.
	r = s.do(t, "POST", "/sessions", `{"tier": "sandbox"}`, admin...)
	require.Equal(t, 201, r.status, r.raw)
	require.Equal(t, "sandbox", r.body["tier"])
	id := r.body["session_id"].(string)
	r = s.do(t, "POST", "/sessions/"+id+"/exec", `{"code": "x = 1\nwrite_file('a', 'b')"}`, admin...)
	require.Equal(t, 502, r.status, r.raw)
	require.Contains(t, r.raw, "PermissionError", "sandbox grants no workspace")
	require.Equal(t, "session", tierOf(t, s, r, "sandbox")["kind"])
	r = s.do(t, "POST", "/sessions/"+id+"/exec", `{"code": "x", "tier": "trusted"}`, admin...)
	require.Equal(t, 400, r.status)
	require.Contains(t, r.raw, "a session's turns run in the tier it was made with")
	require.Equal(t, 403, s.do(t, "POST", "/sessions", `{"tier": "testing"}`, limited...).status)
	r = s.do(t, "POST", "/sessions", ``, admin...)
	require.Equal(t, 201, r.status, r.raw)
	require.Equal(t, "testing", r.body["tier"])
	r = s.do(t, "POST", "/sessions/"+r.body["session_id"].(string)+"/exec", `{"code": "write_file('a', 'b')"}`, admin...)
	require.Equal(t, 200, r.status, r.raw)
	tierOf(t, s, r, "testing")

	// Skills: their own tier, or a stricter one asked for.
	r = s.do(t, "POST", "/skills/echo/execute", `{"args": {"message": "m"}}`, admin...)
	require.Equal(t, 200, r.status, r.raw)
	tierOf(t, s, r, "trusted")
	r = s.do(t, "POST", "/skills/execute", `{"skill": "echo", "args": {"message": "m"}, "tier": "sandbox"}`, admin...)
	require.Equal(t, 200, r.status, r.raw)
	tierOf(t, s, r, "sandbox")
	r = s.do(t, "POST", "/skills/held/execute", `{}`, admin...)
	require.Equal(t, 502, r.status, r.raw)
	require.Contains(t, r.raw, "import of 'os' is not allowed", "the handler is held to its tier's imports")
	tierOf(t, s, r, "sandbox")
	r = s.do(t, "POST", "/skills/held/execute", `{"tier": "testing"}`, admin...)
	require.Equal(t, 400, r.status)
	require.Contains(t, r.raw, "skill held runs in tier sandbox or a stricter one")
	r = s.do(t, "POST", "/skills/reader/execute", `{"tier": "sandbox"}`, admin...)
	require.Equal(t, 502, r.status, r.raw)
	require.Contains(t, r.raw, "PermissionError", "a capability the tier lacks is refused, whatever the flags")
	r = s.do(t, "POST", "/skills/reader/execute", `{}`, admin...)
	require.Equal(t, 200, r.status, r.raw)
	r = s.do(t, "POST", "/skills/echo/execute", `{"args": {"message": "m"}}`, limited...)
	require.Equal(t, 200, r.status, r.raw)
	tierOf(t, s, r, "sandbox")
	r = s.do(t, "POST", "/skills/echo/execute", `{"tier": "trusted"}`, limited...)
	require.Equal(t, 403, r.status, r.raw)

	// GET /skills/{name} says which tier runs get.
	r = s.do(t, "GET", "/skills/held", "", admin...)
	require.Equal(t, "sandbox", r.body["tier"], r.raw)
	require.EqualValues(t, 1_000_000_000, r.body["limits"].(map[string]any)["fuel"])
	require.Equal(t, []any{"submit_result"}, r.body["grants"])
}
