package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A skill registered over the API survives a restart of `wasmpy serve`
// over the same SQLite file: the store keeps it, with its state.
func TestServeRegisteredSurviveRestart(t *testing.T) {
	requireCapabilities(t)
	db := filepath.Join(t.TempDir(), "p.db")
	code, secret, errOut := wasmpyCLI(t, "", "token", "create", "ops", "--role", "admin", "--db", db)
	require.Equal(t, 0, code, errOut)
	auth := []string{"Authorization", "Bearer " + strings.TrimSpace(secret)}
	files, err := json.Marshal(map[string]any{"files": map[string]string{
		"skill.yaml":  "name: shout\nversion: 1.0.0\ndescription: shouts\nhandler: shout.run\nsafety_flags: [none]\n",
		"schema.json": `{"input": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"], "additionalProperties": false}, "output": {"type": "string"}}`,
		"shout.py":    "def run(text):\n    return text.upper()\n",
	}})
	require.NoError(t, err)

	url, logs, stop := serveCLI(t, "--skills", testSkills, "--db", db)
	require.Contains(t, logs.String(), `"auth":true`, "the store holds a token")
	code, body := httpDo(t, "POST", url+"/skills/register", string(files), auth...)
	require.Equal(t, 201, code, "%v", body)
	code, body = httpDo(t, "POST", url+"/skills/shout/execute", `{"args": {"text": "hey"}}`, auth...)
	require.Equal(t, 200, code, "%v", body)
	require.Equal(t, "HEY", body["output"])
	require.Equal(t, 0, stop())

	url, _, stop = serveCLI(t, "--skills", testSkills, "--db", db)
	defer stop()
	code, health := httpDo(t, "GET", url+"/health", "")
	require.Equal(t, 200, code)
	require.EqualValues(t, 6, health["skills"], "the five of testdata/skills and the registered one")
	code, body = httpDo(t, "POST", url+"/skills/shout/execute", `{"args": {"text": "again"}}`, auth...)
	require.Equal(t, 200, code, "%v", body)
	require.Equal(t, "AGAIN", body["output"])
	code, body = httpDo(t, "POST", url+"/skills/register", string(files), auth...)
	require.Equal(t, 409, code, "%v", body)
	code, body = httpDo(t, "GET", url+"/audit", "", auth...)
	require.Equal(t, 200, code)
	entry := body["entries"].([]any)[0].(map[string]any)
	require.Equal(t, "register", entry["action"])
	require.Equal(t, "ops", entry["actor"])
	require.Len(t, entry["hash"], 64)
}
