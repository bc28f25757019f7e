package skills_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/skills"
	"github.com/wasmpy/wasmpy/tiers"
)

const fetchHandler = `import urllib.request

def run(url):
    try:
        return {"body": urllib.request.urlopen(url, data=b"from a skill").read().decode()}
    except OSError as e:
        return {"error": str(e)}
`

// A skill flagged network_access reaches the hosts of its http block,
// under a tier that lists http_request; one held to a tier that does not
// (no default tier does) is refused at load, naming it.
func TestSkillHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		io.WriteString(w, r.Method+" "+string(b))
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	for name, tier := range map[string]string{"online": "tier: online\n", "plain": "tier: offline\n"} {
		writeSkill(t, filepath.Join(dir, name), map[string]string{
			"skill.yaml": "name: " + name + "\nversion: 1.0.0\ndescription: fetches\nhandler: handler.run\n" +
				"safety_flags: [network_access]\nhttp: {hosts: ['" + host + "'], methods: [post], max_requests: 3, timeout: 5s}\n" + tier,
			"schema.json": `{"input": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"], "additionalProperties": false}, "output": {"type": "object"}}`,
			"handler.py":  fetchHandler,
		})
	}
	set, err := tiers.Parse([]byte("tiers:\n  - {name: online, extends: trusted, capabilities: [submit_result, http_request]}\n  - {name: offline, extends: trusted}\n"))
	require.NoError(t, err)
	ctx := context.Background()
	ex, err := runs.NewExecutor(ctx, runs.ExecutorConfig{Sandbox: wasmpy.Config{Interpreter: os.Getenv("WASMPY_INTERPRETER")}, Tiers: set})
	require.NoError(t, err)
	defer ex.Close(ctx)
	reg, err := skills.LoadDir(ctx, dir, skills.LoadOptions{Checker: ex.Checker(), Tiers: set})
	require.NoError(t, err)
	// plain is held to offline, which does not list http_request: refused at load.
	require.Len(t, reg.Problems(), 1)
	require.Equal(t, "plain", reg.Problems()[0].Skill)
	require.Contains(t, reg.Problems()[0].Reason, `tier "offline": does not grant http_request, which the safety flags ask for`)
	online, _ := reg.Get("online")
	require.Contains(t, online.Grants(), wasmpy.HTTPRequest)
	require.Contains(t, ex.Describe(online).Grants, wasmpy.HTTPRequest)

	out := func(name string) map[string]any {
		s, _ := reg.Get(name)
		x, err := ex.Execute(ctx, s, runs.Request{Args: json.RawMessage(`{"url": "` + srv.URL + `"}`), ActorID: "t", ActorType: "test"})
		require.NoError(t, err)
		require.Nil(t, x.Error, x.Result.Stderr)
		var v map[string]any
		require.NoError(t, json.Unmarshal(x.Result.Output, &v))
		return v
	}
	require.Equal(t, map[string]any{"body": "POST from a skill"}, out("online"))
}
