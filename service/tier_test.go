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
	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/service"
	"github.com/wasmpy/wasmpy/skills"
)

// tierServer is a service whose store keeps sessions and the tokens
// "limited" and "bob" whose maximum tier is sandbox, and "root", an
// admin's, beside the operator's static token "admin" (a runner with no
// maximum); its skills are echo (no tier: trusted), held (tier: sandbox),
// reader (file_system) and big (tier testing, 200 MiB of memory).
func tierServer(t *testing.T) *server { return tierServerWith(t, nil) }

func tierServerWith(t *testing.T, mutate func(*runs.ExecutorConfig)) *server {
	t.Helper()
	ctx := context.Background()
	st, err := stores.Open(ctx, filepath.Join(t.TempDir(), "p.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	require.NoError(t, st.CreateToken(ctx, &provenance.Token{Name: "ci", Hash: provenance.HashBytes([]byte("limited")), Role: provenance.RoleRunner, MaxTier: "sandbox"}))
	require.NoError(t, st.CreateToken(ctx, &provenance.Token{Name: "bob", Hash: provenance.HashBytes([]byte("bob")), Role: provenance.RoleRunner, MaxTier: "sandbox"}))
	require.NoError(t, st.CreateToken(ctx, &provenance.Token{Name: "root", Hash: provenance.HashBytes([]byte("root")), Role: provenance.RoleAdmin, MaxTier: "trusted"}))
	ecfg := runs.ExecutorConfig{Sandbox: wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER")}, Store: st, Sessions: st}
	if mutate != nil {
		mutate(&ecfg)
	}
	ex, err := runs.NewExecutor(ctx, ecfg)
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
		"big/skill.yaml": {Data: []byte("name: big\nversion: 1.0.0\ndescription: needs memory\nhandler: handler.run\nsafety_flags: [none]\n" +
			"tier: testing\nlimits: {memory: 200MiB}\n")},
		"big/schema.json": {Data: []byte(`{"input": {"type": "object", "properties": {"mib": {"type": "integer"}}, "additionalProperties": false}, "output": {}}`)},
		"big/handler.py":  {Data: []byte("def run(mib=0):\n    return len(bytearray(mib << 20)) >> 20\n")},
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

// #25 item 3: a skill keeps its own limits when its tier is capped. A
// sandbox token ran a skill declaring 200 MiB under tier sandbox (64 MiB)
// and allocated 120 MiB. Capped, every limit is the lower of the skill's
// and the tier's.
func TestCappedTierCapsSkillLimits(t *testing.T) {
	s := tierServer(t)
	admin, limited := []string{"Authorization", "Bearer admin"}, []string{"Authorization", "Bearer limited"}
	r := s.do(t, "POST", "/skills/big/execute", `{"args": {"mib": 120}}`, admin...)
	require.Equal(t, 200, r.status, r.raw)
	prov := tierOf(t, s, r, "testing")
	require.EqualValues(t, 200<<20, prov["limits"].(map[string]any)["memory_bytes"], "its own 200 MiB, within testing's 256")

	for _, path := range []string{"/skills/big/execute", "/skills/execute"} {
		body := `{"args": {"mib": 120}}`
		if path == "/skills/execute" {
			body = `{"skill": "big", "args": {"mib": 120}}`
		}
		r = s.do(t, "POST", path, body, limited...)
		require.Equal(t, 502, r.status, r.raw)
		require.Contains(t, r.raw, `"kind":"memory"`)
		prov = tierOf(t, s, r, "sandbox")
		lim := prov["limits"].(map[string]any)
		require.EqualValues(t, 64<<20, lim["memory_bytes"], "sandbox's 64 MiB, not the skill's 200")
		require.EqualValues(t, 1_000_000_000, lim["fuel"])
		require.EqualValues(t, 10_000, lim["timeout_ms"])
	}
	// Asked for outright by a token allowed more: the same.
	r = s.do(t, "POST", "/skills/big/execute", `{"args": {"mib": 120}, "tier": "sandbox"}`, admin...)
	require.Equal(t, 502, r.status, r.raw)
	require.EqualValues(t, 64<<20, tierOf(t, s, r, "sandbox")["limits"].(map[string]any)["memory_bytes"])
}

// #25 (weak): GET /executions/{id} was not limited to the token that made
// the run (Bob read Alice's record and her session id). Another token gets
// 404, as for a record that does not exist; an admin's reads every one.
func TestExecutionsBelongToTheirCaller(t *testing.T) {
	s := tierServer(t)
	alice, bob, root := []string{"Authorization", "Bearer limited"}, []string{"Authorization", "Bearer bob"}, []string{"Authorization", "Bearer root"}
	r := s.do(t, "POST", "/sessions", ``, alice...)
	require.Equal(t, 201, r.status, r.raw)
	r = s.do(t, "POST", "/sessions/"+r.body["session_id"].(string)+"/exec", `{"code": "x = 1"}`, alice...)
	require.Equal(t, 200, r.status, r.raw)
	id := r.body["provenance"].(map[string]any)["execution_id"].(string)

	r = s.do(t, "GET", "/executions/"+id, "", alice...)
	require.Equal(t, 200, r.status, r.raw)
	require.NotEmpty(t, r.body["session_id"])
	r = s.do(t, "GET", "/executions/"+id, "", bob...)
	require.Equal(t, 404, r.status, r.raw)
	require.Equal(t, "unknown_execution", r.errorCode())
	require.NotContains(t, r.raw, "session")
	r = s.do(t, "GET", "/executions/"+id, "", root...)
	require.Equal(t, 200, r.status, "an admin reads every record: %s", r.raw)

	r = s.do(t, "POST", "/skills/echo/execute", `{"args": {"message": "m"}}`, bob...)
	require.Equal(t, 200, r.status, r.raw)
	id = r.body["provenance"].(map[string]any)["execution_id"].(string)
	require.Equal(t, 200, s.do(t, "GET", "/executions/"+id, "", bob...).status)
	require.Equal(t, 404, s.do(t, "GET", "/executions/"+id, "", alice...).status)
}

// #25 (weak): no budget bounded what sessions hold (four idle sessions of
// 48 MiB cost the server half a GiB; one token could pin ~25 GiB). Budgets
// per caller and in all refuse a new session or a turn with 429
// budget_exceeded until sessions close.
func TestSessionBudgets(t *testing.T) {
	s := tierServerWith(t, func(c *runs.ExecutorConfig) {
		c.Budgets = runs.SessionBudgets{SessionsPerCaller: 2, MemoryPerCaller: 8 << 20, Memory: 18 << 20, StorePerCaller: 2 << 20}
	})
	alice, bob, admin := []string{"Authorization", "Bearer limited"}, []string{"Authorization", "Bearer bob"}, []string{"Authorization", "Bearer admin"}
	open := func(who []string) string {
		t.Helper()
		r := s.do(t, "POST", "/sessions", ``, who...)
		require.Equal(t, 201, r.status, r.raw)
		return r.body["session_id"].(string)
	}
	turn := func(who []string, id, code string) reply {
		t.Helper()
		return s.do(t, "POST", "/sessions/"+id+"/exec", `{"code": "`+code+`"}`, who...)
	}
	refused := func(r reply, why string) {
		t.Helper()
		require.Equal(t, 429, r.status, r.raw)
		require.Equal(t, "budget_exceeded", r.errorCode())
		require.Regexp(t, why, r.raw)
	}
	a1, a2 := open(alice), open(alice)
	refused(s.do(t, "POST", "/sessions", ``, alice...), "this caller has 2 sessions open, its budget of 2")
	b1 := open(bob)

	// Memory: Alice's 16 MiB passes her 8 MiB: her next turn, in any of her
	// sessions, waits until she closes one; Bob's do not.
	require.Equal(t, 200, turn(alice, a1, `x = b'\\x01' * (16 << 20)`).status)
	refused(turn(alice, a2, "1"), `this caller's sessions hold 1[67]\.\dMiB of memory, at its budget of 8MiB`)
	refused(s.do(t, "POST", "/sessions/"+a1+"/fork", ``, alice...), "this caller has 2 sessions open")
	require.Equal(t, 200, turn(bob, b1, "1").status)

	// The store: what it keeps of the operator's session (3 MiB that do
	// not compress) passes its 2 MiB.
	o1 := open(admin)
	require.Equal(t, 200, turn(admin, o1, "import os; x = os.urandom(3 << 20)").status)
	refused(turn(admin, o1, "1"), `this caller's sessions take 3\.\dMiB of the session store, at its budget of 2MiB`)

	// In all: 16 + 3 MiB pass the service's 18.
	refused(turn(bob, b1, "1"), "of memory, at its budget of 18MiB: retry later")

	require.Equal(t, 204, s.do(t, "DELETE", "/sessions/"+a1, "", alice...).status)
	require.Equal(t, 200, turn(alice, a2, "1").status)
	require.Equal(t, 200, turn(bob, b1, "1").status)
	open(alice)
}
