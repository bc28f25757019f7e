package service

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/skills"
)

// apiRoute documents one route for GET /openapi.json with the Go types its
// handler decodes and answers, so the document is generated from the code
// and cannot drift from it; TestOpenAPI checks every route the mux serves
// is here.
type apiRoute struct {
	pattern string // as registered: "GET /skills/{name}"
	summary string
	body    any      // the request body's type, nil for none
	bodyOpt bool     // the body may be absent
	answer  any      // the success answer's type; nil with text for text/plain, or for none
	text    string   // a text/plain answer's description
	status  int      // the success status; 0 means 200
	runs    bool     // a run: a failed one answers its own type (with "error"), not errorBody
	query   []string // the query parameters, each an optional string
	// files: the body may also be multipart/form-data, one part per file,
	// named by the file's name.
	files bool
}

// apiRoutes are every route the service serves.
var apiRoutes = []apiRoute{
	{pattern: "GET /{$}", summary: "The service: name, version, links", answer: rootInfo{}},
	{pattern: "GET /health", summary: "Skill counts, the interpreter; 503 status loading until the skills have loaded (never needs a token)", answer: healthInfo{}},
	{pattern: "GET /health/live", summary: "Liveness: 200 while the process serves, loading or not (never needs a token)", answer: healthInfo{}},
	{pattern: "GET /health/ready", summary: "Readiness: 503 not_ready while draining, loading skills or without the store (never needs a token)", answer: readyInfo{}},
	{pattern: "GET /skills", summary: "The loaded skills", answer: skillList{}},
	{pattern: "GET /skills/list", summary: "The loaded skills (classic route)", answer: skillList{}},
	{pattern: "GET /skills/{name}", summary: "One skill", answer: skills.Info{}},
	{pattern: "GET /skills/{name}/schema", summary: "A skill's input and output JSON Schemas", answer: schemaPair{}},
	{pattern: "POST /skills/{name}/execute", summary: "Run a skill", body: executeBody{}, answer: runs.ExecutionJSON{}, runs: true},
	{pattern: "POST /skills/execute", summary: "Run the skill named in the body (classic route): the output as result", body: classicBody{}, answer: classicAnswer{}, runs: true},
	{pattern: "GET /executions/{id}", summary: "A provenance record", answer: runs.RecordJSON{}},
	{pattern: "POST /exec", summary: "Run raw code (only with --enable-exec); Accept: text/event-stream streams its output", body: execBody{}, answer: runs.ExecutionJSON{}, runs: true},
	{pattern: "POST /def", summary: "A function the LLM writes from its signature, tested and called, as wasmpy def (only with --enable-exec and an LLM endpoint)", body: defBody{}, answer: defAnswer{}},
	{pattern: "POST /sessions", summary: "Start a session (with --enable-exec): Python state that lasts across turns, in a trust tier",
		body: sessionBody{}, bodyOpt: true, answer: runs.SessionInfo{}, status: http.StatusCreated},
	{pattern: "GET /sessions/{id}", summary: "A session", answer: runs.SessionInfo{}},
	{pattern: "POST /sessions/{id}/exec", summary: "Run one turn of a session, as POST /exec", body: execBody{}, answer: runs.ExecutionJSON{}, runs: true},
	{pattern: "POST /sessions/{id}/fork", summary: "A new session from this one's state", answer: runs.SessionInfo{}, status: http.StatusCreated},
	{pattern: "DELETE /sessions/{id}", summary: "Close a session", status: http.StatusNoContent},
	{pattern: "POST /skills/register", summary: "Register a skill version from its three files (admin token); 422 invalid_skill lists every problem, 409 skill_exists for a version registered already",
		body: registerBody{}, files: true, answer: skills.Info{}, status: http.StatusCreated},
	{pattern: "GET /skills/{name}/versions/{version}", summary: "One version of a skill", answer: skills.Info{}},
	{pattern: "POST /skills/{name}/versions/{version}/disable", summary: "Disable a registered version (admin token): listed, but runs answer 409 skill_disabled", answer: skills.Info{}},
	{pattern: "POST /skills/{name}/versions/{version}/enable", summary: "Enable a registered version again (admin token)", answer: skills.Info{}},
	{pattern: "DELETE /skills/{name}/versions/{version}", summary: "Delete a registered version (admin token)", status: http.StatusNoContent},
	{pattern: "GET /audit", summary: "The audit trail of the registered skills, newest first (admin token)", answer: auditTrail{}, query: []string{"skill", "limit"}},
	{pattern: "GET /metrics", summary: "Prometheus metrics", text: "Prometheus text exposition format"},
	{pattern: "GET /openapi.json", summary: "This document", answer: map[string]any{}},
}

// wireTypes are the types whose JSON is not their fields' (they have a
// MarshalJSON), and the type whose fields it is.
var wireTypes = map[reflect.Type]reflect.Type{
	reflect.TypeFor[runs.Execution](): reflect.TypeFor[runs.ExecutionJSON](),
}

// openAPI builds the OpenAPI 3.1 document of the routes.
func openAPI(version string, routes []apiRoute) map[string]any {
	g := &schemaGen{defs: map[string]any{}, names: map[reflect.Type]string{}}
	errRef := g.schema(reflect.TypeFor[errorBody]())
	paths := map[string]map[string]any{}
	for _, rt := range routes {
		method, path, _ := strings.Cut(rt.pattern, " ")
		path = strings.TrimSuffix(path, "{$}")
		op := map[string]any{"summary": rt.summary, "operationId": operationID(method, path)}
		params := pathParams(path)
		for _, q := range rt.query {
			params = append(params, map[string]any{"name": q, "in": "query", "required": false, "schema": map[string]any{"type": "string"}})
		}
		if len(params) > 0 {
			op["parameters"] = params
		}
		if rt.body != nil {
			content := map[string]any{"application/json": map[string]any{"schema": g.schema(reflect.TypeOf(rt.body))}}
			if rt.files {
				content["multipart/form-data"] = map[string]any{"schema": map[string]any{"type": "object",
					"description":          "one part per file, named by the file's name",
					"additionalProperties": map[string]any{"type": "string", "contentMediaType": "application/octet-stream"}}}
			}
			op["requestBody"] = map[string]any{"required": !rt.bodyOpt, "content": content}
		}
		status := rt.status
		if status == 0 {
			status = http.StatusOK
		}
		ok := map[string]any{"description": http.StatusText(status)}
		switch {
		case rt.answer != nil:
			ok["content"] = map[string]any{"application/json": map[string]any{"schema": g.schema(reflect.TypeOf(rt.answer))}}
		case rt.text != "":
			ok["description"] = rt.text
			ok["content"] = map[string]any{"text/plain": map[string]any{"schema": map[string]any{"type": "string"}}}
		}
		fail := map[string]any{"description": "An error, with its stable code (see the error codes)",
			"content": map[string]any{"application/json": map[string]any{"schema": errRef}}}
		responses := map[string]any{strconv.Itoa(status): ok, "default": fail}
		if rt.runs {
			responses["502"] = map[string]any{"description": "The run failed (run_failed, invalid_output): the answer has error beside the run",
				"content": map[string]any{"application/json": map[string]any{"schema": g.schema(reflect.TypeOf(rt.answer))}}}
			responses["504"] = map[string]any{"description": "The run timed out: the answer has error beside the run",
				"content": map[string]any{"application/json": map[string]any{"schema": g.schema(reflect.TypeOf(rt.answer))}}}
		}
		op["responses"] = responses
		if paths[path] == nil {
			paths[path] = map[string]any{}
		}
		paths[path][strings.ToLower(method)] = op
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "wasmpy skill service", "version": version,
			"description": "Skills and raw Python run in the wasmpy sandbox, with provenance. Errors are {\"error\": {\"code\", \"message\"}} with a stable code."},
		"jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
		"paths":             paths,
		"components": map[string]any{
			"schemas":         g.defs,
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}},
		},
		"security": []any{map[string]any{}, map[string]any{"bearer": []any{}}},
	}
}

func (s *Service) serveOpenAPI(w http.ResponseWriter, r *http.Request) error {
	s.writeJSON(w, http.StatusOK, s.openapi)
	return nil
}

var paramRE = regexp.MustCompile(`\{([a-z_]+)\}`)

func pathParams(path string) []any {
	var params []any
	for _, m := range paramRE.FindAllStringSubmatch(path, -1) {
		params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
	}
	return params
}

// operationID is a unique id from the method and path: getSkillsNameSchema.
func operationID(method, path string) string {
	id := strings.ToLower(method)
	for _, part := range strings.FieldsFunc(path, func(r rune) bool { return r == '/' || r == '{' || r == '}' || r == '_' }) {
		id += strings.ToUpper(part[:1]) + part[1:]
	}
	if path == "/" {
		id += "Root"
	}
	return id
}

// schemaGen turns Go types into JSON Schemas as encoding/json marshals
// them; each named struct becomes a component, referred to by $ref.
type schemaGen struct {
	defs  map[string]any
	names map[reflect.Type]string
}

func (g *schemaGen) schema(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if w, ok := wireTypes[t]; ok {
		t = w
	}
	switch t {
	case reflect.TypeFor[json.RawMessage]():
		return map[string]any{"description": "any JSON value"}
	case reflect.TypeFor[time.Time]():
		return map[string]any{"type": "string", "format": "date-time"}
	}
	if t.Implements(reflect.TypeFor[json.Marshaler]()) || reflect.PointerTo(t).Implements(reflect.TypeFor[json.Marshaler]()) {
		panic(fmt.Sprintf("openapi: %v has its own MarshalJSON: add it to wireTypes", t))
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schema(t.Elem())}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		return g.object(t)
	}
	panic(fmt.Sprintf("openapi: no schema for %v", t))
}

// object is a struct's schema: a $ref to its component.
func (g *schemaGen) object(t reflect.Type) map[string]any {
	name, ok := g.names[t]
	if !ok {
		name = componentName(t, g.names)
		g.names[t] = name
		props, required := map[string]any{}, []string{}
		g.fields(t, props, &required)
		sort.Strings(required)
		def := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			def["required"] = required
		}
		g.defs[name] = def
	}
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

// fields adds t's JSON fields, those of embedded structs included.
func (g *schemaGen) fields(t reflect.Type, props map[string]any, required *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			g.fields(ft, props, required)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		s := g.schema(f.Type)
		if f.Type.Kind() == reflect.Pointer && !strings.Contains(opts, "omitempty") {
			s = map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
		}
		props[name] = s
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			*required = append(*required, name)
		}
	}
}

// componentName is the type's name, qualified by its package when two
// packages have one of that name.
func componentName(t reflect.Type, taken map[reflect.Type]string) string {
	name := t.Name()
	if name == "" {
		name = "Anonymous"
	}
	name = strings.TrimSuffix(strings.ToUpper(name[:1])+name[1:], "JSON") // ExecutionJSON is the Execution
	for other, n := range taken {
		if n == name && other != t {
			pkg := t.PkgPath()
			return strings.ToUpper(pkg[strings.LastIndex(pkg, "/")+1:][:1]) + pkg[strings.LastIndex(pkg, "/")+2:] + name
		}
	}
	return name
}
