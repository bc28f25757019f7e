package service_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/service"
)

// metaSchema compiles the OpenAPI 3.1 meta-schema that also checks every
// Schema Object against OpenAPI's JSON Schema dialect (testdata/openapi-3.1).
func metaSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	for _, f := range []string{"schema.json", "schema-base.json", "dialect/base.schema.json", "meta/base.schema.json"} {
		b, err := os.ReadFile(filepath.Join("testdata/openapi-3.1", f))
		require.NoError(t, err)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		require.NoError(t, err)
		require.NoError(t, c.AddResource(doc.(map[string]any)["$id"].(string), doc))
	}
	s, err := c.Compile("https://spec.openapis.org/oas/3.1/schema-base/2022-10-07")
	require.NoError(t, err)
	return s
}

// answerSchemas closes the document's schemas (strict) and returns the
// schema of a route's answer with a status ("default" for errors).
func answerSchemas(t *testing.T, doc any) func(method, path, status string) *jsonschema.Schema {
	strict(doc)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("mem:///openapi.json", doc))
	return func(method, path, status string) *jsonschema.Schema {
		esc := strings.ReplaceAll(path, "/", "~1")
		loc := "mem:///openapi.json#/paths/" + esc + "/" + strings.ToLower(method) + "/responses/" + status + "/content/application~1json/schema"
		s, err := c.Compile(loc)
		require.NoError(t, err, loc)
		return s
	}
}

// strict closes every object schema of the document (additionalProperties:
// false), so an answer with a field the document lacks fails the test.
func strict(v any) {
	switch v := v.(type) {
	case map[string]any:
		if v["type"] == "object" && v["properties"] != nil {
			v["additionalProperties"] = false
		}
		for _, c := range v {
			strict(c)
		}
	case []any:
		for _, c := range v {
			strict(c)
		}
	}
}

func TestOpenAPI(t *testing.T) {
	ex, reg, _ := fixtures(t)
	svc, err := service.New(service.Config{Registry: reg, Executor: ex, Version: "v1.2.3", EnableExec: true,
		ExecLimits: wasmpy.Limits{Timeout: 5 * time.Second}})
	require.NoError(t, err)
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()

	get := func(method, path, body string) (int, []byte) {
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, b
	}
	status, raw := get("GET", "/openapi.json", "")
	require.Equal(t, 200, status)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	require.NoError(t, err)
	meta := metaSchema(t)
	require.NoError(t, meta.Validate(doc), "a valid OpenAPI 3.1 document")
	var broken map[string]any
	require.NoError(t, json.Unmarshal(raw, &broken))
	broken["components"].(map[string]any)["schemas"].(map[string]any)["RootInfo"].(map[string]any)["type"] = "record"
	require.Error(t, meta.Validate(broken), "the validator sees a schema that is not one")

	// Every route the service serves is documented.
	paths := doc.(map[string]any)["paths"].(map[string]any)
	for _, p := range service.Patterns(svc) {
		method, path, _ := strings.Cut(p, " ")
		path = strings.TrimSuffix(path, "{$}")
		require.Contains(t, paths, path, p)
		require.Contains(t, paths[path], strings.ToLower(method), p)
	}
	require.Equal(t, "v1.2.3", doc.(map[string]any)["info"].(map[string]any)["version"])

	// Real answers match the document's schemas, closed: no field the
	// document lacks, none it requires missing.
	schemaOf := answerSchemas(t, doc)
	var id string
	for _, tc := range []struct {
		method, path, route, body string
		status                    int
		documented                string
	}{
		{"GET", "/", "/", "", 200, "200"},
		{"GET", "/health", "/health", "", 200, "200"},
		{"GET", "/skills", "/skills", "", 200, "200"},
		{"GET", "/skills/list", "/skills/list", "", 200, "200"},
		{"GET", "/skills/echo", "/skills/{name}", "", 200, "200"},
		{"GET", "/skills/echo/schema", "/skills/{name}/schema", "", 200, "200"},
		{"POST", "/skills/echo/execute", "/skills/{name}/execute", `{"args": {"message": "hi"}}`, 200, "200"},
		{"POST", "/skills/execute", "/skills/execute", `{"skill": "echo", "args": {"message": "hi"}, "actor_id": "a", "actor_type": "agent"}`, 200, "200"},
		{"POST", "/skills/execute", "/skills/execute", `{"skill": "boom", "args": {}}`, 502, "502"},
		{"POST", "/skills/boom/execute", "/skills/{name}/execute", `{"args": {}}`, 502, "502"},
		{"POST", "/exec", "/exec", `{"code": "print(1)\nsubmit_result([1])"}`, 200, "200"},
		{"GET", "/executions/ID", "/executions/{id}", "", 200, "200"},
		{"GET", "/skills/nope", "/skills/{name}", "", 404, "default"},
		{"POST", "/skills/execute", "/skills/execute", `{"skill": "echo", "args": {"message": 1}}`, 422, "default"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			status, raw := get(tc.method, strings.Replace(tc.path, "ID", id, 1), tc.body)
			require.Equal(t, tc.status, status, string(raw))
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
			require.NoError(t, err)
			require.NoError(t, schemaOf(tc.method, tc.route, tc.documented).Validate(v), string(raw))
			if tc.path == "/exec" {
				var x struct {
					Provenance struct {
						ExecutionID string `json:"execution_id"`
					}
				}
				require.NoError(t, json.Unmarshal(raw, &x))
				id = x.Provenance.ExecutionID
			}
		})
	}
}
