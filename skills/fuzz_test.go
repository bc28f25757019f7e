package skills_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/skills"
)

// FuzzLoad loads a skill directory made of arbitrary skill.yaml, schema.json
// and handler.py, with the real handler checker (which only runs once the
// files are otherwise valid), then checks arbitrary arguments against
// whatever loaded. Load never fails for a broken skill: it is left out with
// one-line reasons naming its files, and checking arguments only ever
// refuses with invalid_input or approval_required. (That a broken skill
// never keeps a good one from loading is TestLoadBrokenSkills'.)
//
//	go test ./skills -run '^$' -fuzz FuzzLoad -fuzztime 5m
func FuzzLoad(f *testing.F) {
	good := goodSkill("fuzzed")
	f.Add(good["skill.yaml"], good["schema.json"], good["handler.py"], `{"x": 1}`)
	f.Add(good["skill.yaml"], good["schema.json"], good["handler.py"], `{"x": "1", "y": 2}`)
	f.Add(good["skill.yaml"]+"requires_approval: true\nlimits: {timeout: 1s, memory: 64MiB, fuel: 1000}\ntags: [a, b]\n",
		good["schema.json"], good["handler.py"], `{}`)
	f.Add(strings.Replace(good["skill.yaml"], "[none]", "[pii_risk, side_effect, file_system]", 1), good["schema.json"], good["handler.py"], `{"x": 9007199254740993}`)
	f.Add("name: other\nversion: 1.0.0-rc.1+b\ndescription: d\nhandler: handler.run\nsafety_flags: [none]\n", good["schema.json"], good["handler.py"], `{"x": 1}`)
	f.Add("name: fuzzed\nversion: 1.0.0\ndescription: d\nhandler: handler.run\nsafety_flags: [none]\nlimits: {timeout: 99999h, memory: 1EiB}\n", good["schema.json"], good["handler.py"], `{}`)
	f.Add("name: &a [*a]\n", `{}`, ``, `{}`)
	f.Add("{{{", `{"input": {"type": "object"}, "output": {}} {}`, "def run(:", `[`)
	f.Add(good["skill.yaml"], `{"input": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"x": {"type": "string", "format": "email", "pattern": "^(a+)+$"}}, "required": ["x"], "additionalProperties": false}, "output": {"$ref": "#/$defs/o", "$defs": {"o": {"$ref": "#/$defs/o"}}}}`, good["handler.py"], `{"x": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"}`)
	f.Add(good["skill.yaml"], `{"input": {"type": "object", "properties": {"x": {"items": {"items": {"items": {"items": {}}}}}}, "required": ["x"], "additionalProperties": false}, "output": {"$ref": "https://example.com/s.json"}}`, good["handler.py"], `{"x": [[[[1]]]]}`)
	f.Add(good["skill.yaml"], `{"input": {"type": "object", "properties": {"x": {"type": "string", "maxLength": 3}}, "required": ["x"], "additionalProperties": false}, "output": {}}`, good["handler.py"], `{"x": "\ud800\udc00\ud800"}`)
	f.Add(good["skill.yaml"], good["schema.json"], "import os\nos.system('x')\ndef run(x, *a, y, **k):\n    yield x\n", `{"x": 1e400}`)

	checker := testExecutor(f).Checker()
	f.Fuzz(func(t *testing.T, manifest, schema, handler, args string) {
		fsys := fstest.MapFS{
			"fuzzed/skill.yaml":  {Data: []byte(manifest)},
			"fuzzed/schema.json": {Data: []byte(schema)},
			"fuzzed/handler.py":  {Data: []byte(handler)},
		}
		reg, err := skills.Load(context.Background(), fsys, skills.LoadOptions{Root: "root", Checker: checker})
		require.NoError(t, err)

		require.True(t, len(reg.Skills()) == 1 != (len(reg.Problems()) > 0), "the skill is either loaded or refused: %v", reg.Problems())
		for _, p := range reg.Problems() {
			require.True(t, strings.HasPrefix(p.Path, "root/fuzzed/"), p.Path)
			require.NotEmpty(t, p.Reason)
			require.NotContains(t, p.Reason, "\n", "a reason is one line")
			require.NotContains(t, p.Reason, "goroutine ")
		}
		for _, s := range reg.Skills() {
			require.Equal(t, "root/fuzzed", s.Dir)
			require.True(t, json.Valid(s.InputSchema) && json.Valid(s.OutputSchema))
			_, err := json.Marshal(testExecutor(t).Describe(s))
			require.NoError(t, err)
			for _, a := range []string{args, `{}`} {
				hash, err := runs.Check(s, runs.Request{Args: json.RawMessage(a)})
				if err == nil {
					require.Len(t, hash, 64)
					continue
				}
				var se *skills.Error
				require.True(t, errors.As(err, &se), "%T %v", err, err)
				require.Contains(t, []string{runs.CodeInvalidInput, runs.CodeApprovalRequired}, se.Code)
				require.NotContains(t, se.Message, "\n", "a message is one line")
			}
		}
	})
}
