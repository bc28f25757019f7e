package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/internal/testing/pgtest"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/stores"
	"github.com/wasmpy/wasmpy/service"
	"github.com/wasmpy/wasmpy/skills"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// greet is a skill to register, at a version.
func greet(version, greeting string) map[string]string {
	return map[string]string{
		"skill.yaml": "name: greet\nversion: " + version + "\ndescription: greets someone\nhandler: greet.run\nsafety_flags: [none]\n",
		"schema.json": `{"input": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"], "additionalProperties": false},
			"output": {"type": "object", "properties": {"greeting": {"type": "string"}}, "required": ["greeting"]}}`,
		"greet.py": "def run(name):\n    print('greeting', name)\n    return {'greeting': '" + greeting + " ' + name}\n",
	}
}

func filesBody(t testing.TB, files map[string]string) string {
	b, err := json.Marshal(map[string]any{"files": files})
	require.NoError(t, err)
	return string(b)
}

// replica is one service over a store of registered skills: the skills of
// testdata/skills, and the registered ones.
type replica struct {
	*server
	reg *skills.Registry
}

// secrets are the tokens seeded in a store.
type secrets struct{ admin, runner string }

// seedTokens creates an admin's and a runner's token in the store at addr.
func seedTokens(t *testing.T, addr string) secrets {
	st, err := stores.Open(context.Background(), addr)
	require.NoError(t, err)
	defer st.Close()
	var s secrets
	for _, tk := range []struct {
		name, role string
		secret     *string
	}{{"ops", provenance.RoleAdmin, &s.admin}, {"agent", provenance.RoleRunner, &s.runner}} {
		tok, secret, err := provenance.NewToken(tk.name, tk.role, "")
		require.NoError(t, err)
		require.NoError(t, st.CreateToken(context.Background(), tok))
		*tk.secret = secret
	}
	return s
}

// startReplica opens the store at addr and serves it; close stops the
// service and closes the store, as a restart would.
func startReplica(t *testing.T, addr string) (*replica, func()) {
	t.Helper()
	ctx := context.Background()
	ex, _, _ := fixtures(t)
	st, err := stores.Open(ctx, addr)
	require.NoError(t, err)
	reg, err := skills.LoadDir(ctx, "../testdata/skills", skills.LoadOptions{Checker: ex.Checker(), Registered: st})
	require.NoError(t, err)
	var srv *server
	srv = startServer(t, func(c *service.Config) { c.Registry, c.TokenStore = reg, st })
	return &replica{server: srv, reg: reg}, func() { srv.Close(); st.Close() }
}

func bearer(secret string) []string { return []string{"Authorization", "Bearer " + secret} }

// Changing the registered skills needs an admin's token: none is a 401, a
// runner's a 403, and a service that asks for no token has no admin.
func TestRegisterNeedsAdmin(t *testing.T) {
	addr := filepath.Join(t.TempDir(), "p.db")
	tok := seedTokens(t, addr)
	s, stop := startReplica(t, addr)
	defer stop()
	body := filesBody(t, greet("1.0.0", "hello"))
	for _, c := range []struct {
		method, path, body string
	}{
		{"POST", "/skills/register", body},
		{"POST", "/skills/greet/versions/1.0.0/disable", ""},
		{"POST", "/skills/greet/versions/1.0.0/enable", ""},
		{"DELETE", "/skills/greet/versions/1.0.0", ""},
		{"GET", "/audit", ""},
	} {
		r := s.do(t, c.method, c.path, c.body)
		require.Equal(t, 401, r.status, c.path)
		require.Equal(t, "unauthorized", r.errorCode())
		r = s.do(t, c.method, c.path, c.body, bearer(tok.runner)...)
		require.Equal(t, 403, r.status, c.path)
		require.Equal(t, "forbidden", r.errorCode())
		require.Contains(t, r.raw, `token \"agent\" has role runner`)
	}
	_, ok := s.reg.Get("greet")
	require.False(t, ok, "nothing registered")

	open := startServer(t, nil)
	r := open.do(t, "POST", "/skills/register", body)
	require.Equal(t, 403, r.status)
	require.Contains(t, r.raw, "this service asks for none")
}

// A skill given to register is checked as loading checks a directory, with
// the same problems, all at once.
func TestRegisterValidation(t *testing.T) {
	addr := filepath.Join(t.TempDir(), "p.db")
	tok := seedTokens(t, addr)
	s, stop := startReplica(t, addr)
	defer stop()

	files := map[string]string{
		"skill.yaml":  "name: greet\nversion: one\ndescription: greets\nhandler: greet.run\nsafety_flags: [none]\ntimeout: 5s\n",
		"schema.json": `{"input": {"type": "object"}}`,
		"greet.py":    "def run(name):\n    return {}\n",
		"notes.txt":   "stray",
	}
	r := s.do(t, "POST", "/skills/register", filesBody(t, files), bearer(tok.admin)...)
	require.Equal(t, 422, r.status, r.raw)
	require.Equal(t, "invalid_skill", r.errorCode())
	var got []string
	for _, p := range r.body["error"].(map[string]any)["problems"].([]any) {
		p := p.(map[string]any)
		got = append(got, p["path"].(string)+": "+p["reason"].(string))
	}
	require.Equal(t, []string{
		"skill.yaml: line 6: timeout: unknown field (the fields are name, version, description, handler, safety_flags, requires_approval, tags, requires, limits)",
		"skill.yaml: version \"one\": not a semantic version (MAJOR.MINOR.PATCH, e.g. 1.0.0)",
		"notes.txt: unexpected file: a skill is skill.yaml, schema.json and its handler's module (the module handler names, .py)",
	}, got, "the YAML problems at once, in plain words")
	require.NotContains(t, r.raw, "skills.manifest", "no Go type names")

	// The same files, fixed in skill.yaml, as a directory: loading finds the
	// same problems in schema.json and the handler as registering does.
	files["skill.yaml"] = "name: greet\nversion: 1.0.0\ndescription: greets\nhandler: greet.run\nsafety_flags: [none]\n"
	delete(files, "notes.txt")
	r = s.do(t, "POST", "/skills/register", filesBody(t, files), bearer(tok.admin)...)
	require.Equal(t, 422, r.status, r.raw)
	dir := filepath.Join(t.TempDir(), "greet")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	ex, _, _ := fixtures(t)
	loaded, err := skills.LoadDir(context.Background(), filepath.Dir(dir), skills.LoadOptions{Checker: ex.Checker()})
	require.NoError(t, err)
	var want []any
	for _, p := range loaded.Problems() {
		rel, err := filepath.Rel(dir, p.Path)
		require.NoError(t, err)
		want = append(want, map[string]any{"path": rel, "skill": "greet", "reason": p.Reason})
	}
	require.NotEmpty(t, want)
	require.Equal(t, want, r.body["error"].(map[string]any)["problems"])

	r = s.do(t, "POST", "/skills/register", "name: greet", append(bearer(tok.admin), "Content-Type", "text/yaml")...)
	require.Equal(t, 415, r.status)
	require.Contains(t, r.raw, "multipart/form-data")
	r = s.do(t, "POST", "/skills/register", "--x--", append(bearer(tok.admin), "Content-Type", "multipart/form-data")...)
	require.Equal(t, "bad_request", r.errorCode(), "no boundary")
	for _, c := range []struct{ body, code, msg string }{
		{`{"files": {}}`, "bad_request", "no files"},
		{`{"files": {"../skill.yaml": "x"}}`, "invalid_skill", "not a plain file name"},
		{`{"skill": "greet"}`, "bad_request", "unknown field"},
	} {
		r := s.do(t, "POST", "/skills/register", c.body, bearer(tok.admin)...)
		require.Equal(t, c.code, r.errorCode(), r.raw)
		require.Contains(t, r.raw, c.msg)
	}
}

// multipartBody is the files as curl -F name=@file sends them.
func multipartBody(t *testing.T, files map[string]string) (string, string) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for name, content := range files {
		w, err := mw.CreateFormFile(name, name)
		require.NoError(t, err)
		io.WriteString(w, content)
	}
	require.NoError(t, mw.Close())
	return b.String(), mw.FormDataContentType()
}

// A registered skill runs, is versioned (a version once, never
// overwritten), and its versions can be disabled, enabled and deleted; every
// change is on the audit trail.
func TestRegisterLifecycle(t *testing.T) {
	addr := filepath.Join(t.TempDir(), "p.db")
	tok := seedTokens(t, addr)
	s, stop := startReplica(t, addr)
	defer stop()
	admin := bearer(tok.admin)

	r := s.do(t, "POST", "/skills/register", filesBody(t, greet("1.0.0", "hello")), admin...)
	require.Equal(t, 201, r.status, r.raw)
	require.Equal(t, "/skills/greet/versions/1.0.0", r.header.Get("Location"))
	hash1 := r.body["registration"].(map[string]any)["hash"].(string)
	require.Equal(t, "ops", r.body["registration"].(map[string]any)["registered_by"])
	r = s.do(t, "POST", "/skills/greet/execute", `{"args": {"name": "Ada"}}`, bearer(tok.runner)...)
	require.Equal(t, 200, r.status, r.raw)
	require.Equal(t, "hello Ada", r.body["output"].(map[string]any)["greeting"])

	r = s.do(t, "POST", "/skills/register", filesBody(t, greet("1.0.0", "changed")), admin...)
	require.Equal(t, 409, r.status)
	require.Equal(t, "skill_exists", r.errorCode())
	require.Contains(t, r.raw, "never overwritten")
	r = s.do(t, "POST", "/skills/register", filesBody(t, map[string]string{
		"skill.yaml":  "name: echo\nversion: 9.0.0\ndescription: x\nhandler: h.run\nsafety_flags: [none]\n",
		"schema.json": `{"input": {"type": "object", "additionalProperties": false}, "output": {}}`, "h.py": "def run():\n    return 1\n",
	}), admin...)
	require.Equal(t, 409, r.status, "echo is the skills directory's")
	require.Contains(t, r.raw, "skills directory")

	// A second version, by multipart: it runs by default; the first on request.
	mp, ct := multipartBody(t, greet("1.1.0", "hi"))
	r = s.do(t, "POST", "/skills/register", mp, append(admin, "Content-Type", ct)...)
	require.Equal(t, 201, r.status, r.raw)
	run := func(body string) reply { return s.do(t, "POST", "/skills/greet/execute", body, bearer(tok.runner)...) }
	require.Equal(t, "hi Ada", run(`{"args": {"name": "Ada"}}`).body["output"].(map[string]any)["greeting"])
	r = run(`{"version": "1.0.0", "args": {"name": "Ada"}}`)
	require.Equal(t, "hello Ada", r.body["output"].(map[string]any)["greeting"])
	require.Equal(t, "1.0.0", r.body["provenance"].(map[string]any)["skill_version"])
	r = s.do(t, "POST", "/skills/execute", `{"skill": "greet", "version": "1.0.0", "args": {"name": "Bo"}}`, bearer(tok.runner)...)
	require.Equal(t, "hello Bo", r.body["result"].(map[string]any)["greeting"], "the classic route takes a version too")

	// Disabled: listed as such, refused with a clear 409, and the default
	// falls back to the newest enabled version.
	r = s.do(t, "POST", "/skills/greet/versions/1.1.0/disable", "", admin...)
	require.Equal(t, 200, r.status, r.raw)
	require.Equal(t, true, r.body["disabled"])
	r = run(`{"version": "1.1.0", "args": {"name": "Ada"}}`)
	require.Equal(t, 409, r.status)
	require.Equal(t, "skill_disabled", r.errorCode())
	require.Contains(t, r.raw, "greet version 1.1.0 is disabled")
	require.Equal(t, "hello Ada", run(`{"args": {"name": "Ada"}}`).body["output"].(map[string]any)["greeting"])
	r = s.do(t, "GET", "/skills/greet", "", admin...)
	require.Equal(t, "1.0.0", r.body["version"])
	versions := r.body["versions"].([]any)
	require.Len(t, versions, 2)
	require.Equal(t, false, versions[0].(map[string]any)["disabled"])
	require.Equal(t, true, versions[1].(map[string]any)["disabled"])
	require.Equal(t, true, s.do(t, "GET", "/skills/greet/versions/1.1.0", "", admin...).body["disabled"])

	// Every version disabled: still listed, as disabled; runs refused.
	require.Equal(t, 200, s.do(t, "POST", "/skills/greet/versions/1.0.0/disable", "", admin...).status)
	var listed map[string]any
	for _, sk := range s.do(t, "GET", "/skills", "", admin...).body["skills"].([]any) {
		if sk.(map[string]any)["name"] == "greet" {
			listed = sk.(map[string]any)
		}
	}
	require.NotNil(t, listed, "a skill with every version disabled is listed")
	require.Equal(t, true, listed["disabled"])
	require.Equal(t, "skill_disabled", run(`{"args": {"name": "Ada"}}`).errorCode())
	require.Equal(t, 200, s.do(t, "POST", "/skills/greet/versions/1.0.0/enable", "", admin...).status)
	require.Equal(t, 200, s.do(t, "POST", "/skills/greet/versions/1.1.0/enable", "", admin...).status)

	// Deleted: gone; a name's other versions stay.
	require.Equal(t, 204, s.do(t, "DELETE", "/skills/greet/versions/1.0.0", "", admin...).status)
	r = run(`{"version": "1.0.0", "args": {"name": "Ada"}}`)
	require.Equal(t, 404, r.status)
	require.Contains(t, r.raw, `skill \"greet\" has no version \"1.0.0\" (its versions: 1.1.0)`)
	require.Equal(t, 404, s.do(t, "DELETE", "/skills/greet/versions/1.0.0", "", admin...).status)
	require.Equal(t, 404, s.do(t, "POST", "/skills/nope/versions/1.0.0/disable", "", admin...).status)
	r = s.do(t, "DELETE", "/skills/echo/versions/0.1.0", "", admin...)
	require.Equal(t, 409, r.status)
	require.Equal(t, "not_registered", r.errorCode())

	// The audit trail: who, what, when, and the files' hash.
	r = s.do(t, "GET", "/audit?skill=greet", "", admin...)
	require.Equal(t, 200, r.status, r.raw)
	var steps []string
	for _, e := range r.body["entries"].([]any) {
		e := e.(map[string]any)
		require.Equal(t, "ops", e["actor"])
		require.NotEmpty(t, e["at"])
		steps = append(steps, e["action"].(string)+" "+e["version"].(string))
		if e["version"] == "1.0.0" {
			require.Equal(t, hash1, e["hash"])
		}
	}
	require.Equal(t, []string{"delete 1.0.0", "enable 1.1.0", "enable 1.0.0", "disable 1.0.0", "disable 1.1.0",
		"register 1.1.0", "register 1.0.0"}, steps, "refused changes are not on it")
	require.Len(t, s.do(t, "GET", "/audit?limit=2", "", admin...).body["entries"], 2)
	require.Equal(t, "bad_request", s.do(t, "GET", "/audit?limit=0", "", admin...).errorCode())
}

// Registered skills are in the store: a service started again over the
// same SQLite file serves them, with their state.
func TestRegisteredSurviveRestart(t *testing.T) {
	addr := filepath.Join(t.TempDir(), "p.db")
	tok := seedTokens(t, addr)
	s, stop := startReplica(t, addr)
	admin := bearer(tok.admin)
	require.Equal(t, 201, s.do(t, "POST", "/skills/register", filesBody(t, greet("1.0.0", "hello")), admin...).status)
	require.Equal(t, 201, s.do(t, "POST", "/skills/register", filesBody(t, greet("2.0.0", "hey")), admin...).status)
	require.Equal(t, 200, s.do(t, "POST", "/skills/greet/versions/2.0.0/disable", "", admin...).status)
	stop()

	s, stop = startReplica(t, addr)
	defer stop()
	r := s.do(t, "POST", "/skills/greet/execute", `{"args": {"name": "Ada"}}`, bearer(tok.runner)...)
	require.Equal(t, 200, r.status, r.raw)
	require.Equal(t, "hello Ada", r.body["output"].(map[string]any)["greeting"], "2.0.0 is still disabled")
	require.Equal(t, true, s.do(t, "GET", "/skills/greet/versions/2.0.0", "", admin...).body["disabled"])
	require.Equal(t, 409, s.do(t, "POST", "/skills/register", filesBody(t, greet("1.0.0", "x")), admin...).status)
}

// Over PostgreSQL, replicas share the registered skills: one registered on
// a replica is served by another once it syncs, one disabled on a replica
// stops at once on the others, and a restart keeps them.
func TestRegisteredAcrossReplicasPostgres(t *testing.T) {
	addr := pgtest.NewDatabase(t)
	tok := seedTokens(t, addr)
	a, stopA := startReplica(t, addr)
	defer stopA()
	b, stopB := startReplica(t, addr)
	defer stopB()
	admin, runner := bearer(tok.admin), bearer(tok.runner)

	require.Equal(t, 201, a.do(t, "POST", "/skills/register", filesBody(t, greet("1.0.0", "hello")), admin...).status)
	require.Equal(t, 404, b.do(t, "GET", "/skills/greet", "", runner...).status, "not synced yet")
	require.NoError(t, b.reg.Sync(context.Background()))
	r := b.do(t, "POST", "/skills/greet/execute", `{"args": {"name": "Ada"}}`, runner...)
	require.Equal(t, 200, r.status, r.raw)

	require.Equal(t, 200, b.do(t, "POST", "/skills/greet/versions/1.0.0/disable", "", admin...).status)
	r = a.do(t, "POST", "/skills/greet/execute", `{"args": {"name": "Ada"}}`, runner...)
	require.Equal(t, 409, r.status, "disabled on b: refused on a without waiting for a sync")
	require.Equal(t, "skill_disabled", r.errorCode())
	require.Equal(t, 409, b.do(t, "POST", "/skills/register", filesBody(t, greet("1.0.0", "again")), admin...).status)

	require.Equal(t, 200, a.do(t, "POST", "/skills/greet/versions/1.0.0/enable", "", admin...).status)
	require.Equal(t, 201, b.do(t, "POST", "/skills/register", filesBody(t, greet("1.1.0", "hi")), admin...).status)
	require.Equal(t, 204, b.do(t, "DELETE", "/skills/greet/versions/1.0.0", "", admin...).status)
	require.Equal(t, "unknown_skill", a.do(t, "POST", "/skills/greet/execute", `{"version": "1.0.0", "args": {"name": "Ada"}}`, runner...).errorCode(),
		"deleted on b: refused on a at once")
	require.NoError(t, a.reg.Sync(context.Background()))
	r = a.do(t, "POST", "/skills/greet/execute", `{"args": {"name": "Ada"}}`, runner...)
	require.Equal(t, "hi Ada", r.body["output"].(map[string]any)["greeting"], r.raw)

	// Deleted and registered again on a with other files: b runs the new
	// files at once, not its stale copy.
	require.NoError(t, b.reg.Sync(context.Background()))
	require.Equal(t, 204, a.do(t, "DELETE", "/skills/greet/versions/1.1.0", "", admin...).status)
	require.Equal(t, 201, a.do(t, "POST", "/skills/register", filesBody(t, greet("1.1.0", "howdy")), admin...).status)
	r = b.do(t, "POST", "/skills/greet/execute", `{"args": {"name": "Ada"}}`, runner...)
	require.Equal(t, 200, r.status, r.raw)
	require.Equal(t, "howdy Ada", r.body["output"].(map[string]any)["greeting"])

	stopA()
	c, stopC := startReplica(t, addr)
	defer stopC()
	r = c.do(t, "GET", "/skills/greet", "", runner...)
	require.Equal(t, "1.1.0", r.body["version"])
	require.Len(t, r.body["versions"], 1)
	trail := c.do(t, "GET", "/audit?skill=greet", "", admin...).body["entries"].([]any)
	require.Len(t, trail, 7, "register, disable, enable, register, delete, delete, register")
	require.Equal(t, "register", trail[0].(map[string]any)["action"])
	require.NotEqual(t, trail[0].(map[string]any)["hash"], trail[1].(map[string]any)["hash"], "the new files' hash")
}

// The answers of the registration routes match the OpenAPI document, which
// a real validator accepts.
func TestRegisterOpenAPI(t *testing.T) {
	addr := filepath.Join(t.TempDir(), "p.db")
	tok := seedTokens(t, addr)
	s, stop := startReplica(t, addr)
	defer stop()
	admin := bearer(tok.admin)
	r := s.do(t, "GET", "/openapi.json", "", admin...)
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(r.raw))
	require.NoError(t, err)
	require.NoError(t, metaSchema(t).Validate(doc))
	ops := doc.(map[string]any)["paths"].(map[string]any)["/skills/register"].(map[string]any)["post"].(map[string]any)
	require.Contains(t, ops["requestBody"].(map[string]any)["content"], "multipart/form-data")
	schemaOf := answerSchemas(t, doc)
	for _, c := range []struct {
		method, path, route, body string
		status                    int
		documented                string
	}{
		{"POST", "/skills/register", "/skills/register", filesBody(t, greet("1.0.0", "hello")), 201, "201"},
		{"POST", "/skills/register", "/skills/register", filesBody(t, greet("1.0.0", "hello")), 409, "default"},
		{"POST", "/skills/register", "/skills/register", filesBody(t, map[string]string{"skill.yaml": "name: x"}), 422, "default"},
		{"GET", "/skills/greet/versions/1.0.0", "/skills/{name}/versions/{version}", "", 200, "200"},
		{"POST", "/skills/greet/versions/1.0.0/disable", "/skills/{name}/versions/{version}/disable", "", 200, "200"},
		{"POST", "/skills/greet/versions/1.0.0/enable", "/skills/{name}/versions/{version}/enable", "", 200, "200"},
		{"GET", "/skills", "/skills", "", 200, "200"},
		{"GET", "/audit", "/audit", "", 200, "200"},
		{"DELETE", "/skills/greet/versions/2.0.0", "/skills/{name}/versions/{version}", "", 404, "default"},
	} {
		r := s.do(t, c.method, c.path, c.body, admin...)
		require.Equal(t, c.status, r.status, r.raw)
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(r.raw))
		require.NoError(t, err)
		require.NoError(t, schemaOf(c.method, c.route, c.documented).Validate(v), "%s %s: %s", c.method, c.path, r.raw)
	}
}
