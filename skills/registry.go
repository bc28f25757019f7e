package skills

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/internal/jsonschema"
)

// The files of a skill directory.
const (
	ManifestFile = "skill.yaml"
	SchemaFile   = "schema.json"
)

// Size caps on what a skill directory may hold.
const (
	maxManifestBytes = 64 << 10
	maxSchemaBytes   = 1 << 20
	maxSourceBytes   = 1 << 20
)

// Problem is one reason a skill did not load.
type Problem struct {
	Path   string `json:"path"`            // the file (or directory) at fault
	Skill  string `json:"skill,omitempty"` // the skill's name, when it got that far
	Reason string `json:"reason"`
}

func (p Problem) String() string { return p.Path + ": " + p.Reason }

// Registry is a set of loaded skills, by name, and the problems of the ones
// that did not load. It is immutable, so safe for concurrent use.
type Registry struct {
	skills   map[string]*Skill
	names    []string
	problems []Problem
}

// Get returns the skill called name.
func (r *Registry) Get(name string) (*Skill, bool) {
	s, ok := r.skills[name]
	return s, ok
}

// Skills returns the loaded skills, sorted by name.
func (r *Registry) Skills() []*Skill {
	out := make([]*Skill, len(r.names))
	for i, n := range r.names {
		out[i] = r.skills[n]
	}
	return out
}

// Problems lists why each broken skill did not load: every reason, with the
// path of the file at fault, sorted by path.
func (r *Registry) Problems() []Problem { return slices.Clone(r.problems) }

// LoadOptions configure Load.
type LoadOptions struct {
	// Root is how the skills directory is named in problems' paths, e.g. the
	// directory as the user gave it.
	Root string
	// Checker parses each handler with Python's own ast module, checking it
	// defines the function skill.yaml names with parameters that fit the
	// input schema. Required: a skill is only loaded once its handler parses.
	Checker *wasmpy.Sandbox
	// AllowExternalCalls lets skills flagged external_call load: set it when
	// the executor's sandbox has an LLM endpoint for ask_llm.
	AllowExternalCalls bool
}

// LoadDir loads every skill in the subdirectories of dir; see Load.
func LoadDir(ctx context.Context, dir string, opts LoadOptions) (*Registry, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("skills: %s is not a directory", dir)
	}
	if opts.Root == "" {
		opts.Root = dir
	}
	return Load(ctx, os.DirFS(dir), opts)
}

// Load loads every skill in the top-level directories of fsys (directories
// whose names start with "." or "_" are skipped). Each is checked whole:
// skill.yaml's fields and types, both schemas compile, the handler parses
// and defines its function, names are unique. A broken skill is left out
// and its problems recorded; the error is only for a directory that cannot
// be read at all, or a checker that cannot run.
func Load(ctx context.Context, fsys fs.FS, opts LoadOptions) (*Registry, error) {
	if opts.Checker == nil {
		return nil, errors.New("skills: LoadOptions.Checker is required")
	}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	where := func(elem ...string) string {
		return filepath.Join(append([]string{opts.Root}, elem...)...)
	}
	var loaded []*Skill
	var problems []Problem
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || strings.HasPrefix(e.Name(), "_") {
			continue
		}
		s, probs := loadOne(fsys, e.Name(), where, opts)
		if len(probs) > 0 {
			problems = append(problems, probs...)
			continue
		}
		loaded = append(loaded, s)
	}
	loaded, probs, err := checkHandlers(ctx, opts.Checker, loaded, where)
	if err != nil {
		return nil, err
	}
	problems = append(problems, probs...)

	byName := map[string][]*Skill{}
	for _, s := range loaded {
		byName[s.Name] = append(byName[s.Name], s)
	}
	r := &Registry{skills: map[string]*Skill{}}
	for name, ss := range byName {
		if len(ss) > 1 { // ambiguous: serve none of them
			for _, s := range ss {
				var others []string
				for _, o := range ss {
					if o != s {
						others = append(others, where(o.Dir))
					}
				}
				problems = append(problems, Problem{Path: where(s.Dir, ManifestFile), Skill: name,
					Reason: fmt.Sprintf("name %q is also used by %s", name, strings.Join(others, ", "))})
			}
			continue
		}
		r.skills[name] = ss[0]
		r.names = append(r.names, name)
	}
	sort.Strings(r.names)
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].Path < problems[j].Path })
	r.problems = problems
	// Dir becomes the path users recognise.
	for _, s := range r.skills {
		s.Dir = where(s.Dir)
	}
	return r, nil
}

// loadOne reads and checks one skill directory, short of its handler's
// Python. s.Dir is the directory's name in fsys.
func loadOne(fsys fs.FS, dir string, where func(...string) string, opts LoadOptions) (*Skill, []Problem) {
	s := &Skill{Dir: dir}
	var probs []Problem
	fail := func(file, format string, args ...any) {
		probs = append(probs, Problem{Path: where(dir, file), Skill: s.Name, Reason: fmt.Sprintf(format, args...)})
	}
	raw, err := readCapped(fsys, path.Join(dir, ManifestFile), maxManifestBytes)
	if err != nil {
		fail(ManifestFile, "%v", err)
		return nil, probs
	}
	var m manifest
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		if errors.Is(err, io.EOF) {
			fail(ManifestFile, "empty")
		} else {
			fail(ManifestFile, "%s", yamlReason(err))
		}
		return nil, probs
	}
	for _, reason := range m.check(s, opts) {
		fail(ManifestFile, "%s", reason)
	}

	if raw, err := readCapped(fsys, path.Join(dir, SchemaFile), maxSchemaBytes); err != nil {
		fail(SchemaFile, "%v", err)
	} else {
		for _, reason := range s.loadSchemas(raw) {
			fail(SchemaFile, "%s", reason)
		}
	}

	if s.module != "" {
		file := s.module + ".py"
		src, err := readCapped(fsys, path.Join(dir, file), maxSourceBytes)
		if err != nil {
			fail(file, "%v (handler %q)", err, s.Handler)
		} else {
			s.Source, s.CodeHash = string(src), HashBytes(src)
		}
	}
	return s, probs
}

// loadSchemas compiles schema.json: {"input": <schema>, "output": <schema>}.
func (s *Skill) loadSchemas(raw []byte) []string {
	var parts map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&parts); err != nil {
		return []string{fmt.Sprintf("not a JSON object: %v", err)}
	}
	if dec.More() {
		return []string{"data after the JSON object"}
	}
	var bad []string
	for k := range parts {
		if k != "input" && k != "output" {
			bad = append(bad, fmt.Sprintf("unknown key %q (want input and output)", k))
		}
	}
	sort.Strings(bad)
	compile := func(key string) (json.RawMessage, *jsonschema.Schema) {
		doc, ok := parts[key]
		if !ok {
			bad = append(bad, key+": missing")
			return nil, nil
		}
		sch, err := jsonschema.Compile(doc)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", key, err))
			return nil, nil
		}
		return doc, sch
	}
	s.InputSchema, s.input = compile("input")
	s.OutputSchema, s.output = compile("output")
	if s.input != nil {
		var top struct {
			Type any `json:"type"`
		}
		json.Unmarshal(s.InputSchema, &top)
		if top.Type != "object" {
			bad = append(bad, `input: must have "type": "object" (the arguments are keyword arguments)`)
		}
	}
	return bad
}

func readCapped(fsys fs.FS, name string, limit int64) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errors.New("missing")
		}
		return nil, unwrapPath(err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return nil, errors.New("is a directory")
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, unwrapPath(err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("larger than %d KiB", limit>>10)
	}
	return b, nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// yamlReason turns yaml's multi-line errors into one line.
func yamlReason(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		return strings.Join(te.Errors, "; ")
	}
	return strings.TrimPrefix(flatten(err.Error()), "yaml: ")
}

func flatten(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(lines, " ")
}

//go:embed check_handlers.py
var checkHandlersPy string

// handlerInfo is what check_handlers.py says of one handler.
type handlerInfo struct {
	Error    string   `json:"error"`
	Params   []string `json:"params"`
	Required []string `json:"required"`
	Kwargs   bool     `json:"kwargs"`
}

// checkHandlers parses every handler in one sandbox run and checks each
// function's parameters against its input schema. If the batch run fails
// (a source that crashes the parser, say), each handler is checked alone,
// so one hostile file cannot keep the others from loading.
func checkHandlers(ctx context.Context, sb *wasmpy.Sandbox, ss []*Skill, where func(...string) string) ([]*Skill, []Problem, error) {
	if len(ss) == 0 {
		return nil, nil, nil
	}
	infos, err := runChecker(ctx, sb, ss)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("skills: checking handlers: %w", ctx.Err())
		}
		if len(ss) == 1 {
			infos = []handlerInfo{{Error: "the checker could not parse it: " + err.Error()}}
		} else {
			infos = make([]handlerInfo, len(ss))
			for i, s := range ss {
				one, err := runChecker(ctx, sb, []*Skill{s})
				switch {
				case ctx.Err() != nil:
					return nil, nil, fmt.Errorf("skills: checking handlers: %w", ctx.Err())
				case err != nil:
					infos[i] = handlerInfo{Error: "the checker could not parse it: " + err.Error()}
				default:
					infos[i] = one[0]
				}
			}
		}
	}
	var good []*Skill
	var probs []Problem
	for i, s := range ss {
		reasons := signatureProblems(s, infos[i])
		for _, r := range reasons {
			probs = append(probs, Problem{Path: where(s.Dir, s.module+".py"), Skill: s.Name, Reason: r})
		}
		if len(reasons) == 0 {
			good = append(good, s)
		}
	}
	return good, probs, nil
}

// runChecker runs check_handlers.py over ss.
func runChecker(ctx context.Context, sb *wasmpy.Sandbox, ss []*Skill) ([]handlerInfo, error) {
	type item struct {
		Filename string `json:"filename"`
		Source   string `json:"source"`
		Function string `json:"function"`
	}
	items := make([]item, len(ss))
	for i, s := range ss {
		items[i] = item{Filename: s.module + ".py", Source: s.Source, Function: s.fn}
	}
	in, err := json.Marshal(items)
	if err != nil {
		return nil, err
	}
	res, err := sb.Run(ctx, wasmpy.Job{Code: checkHandlersPy, Filename: "<check_handlers>", Stdin: in,
		Limits: wasmpy.Limits{Timeout: time.Minute, Memory: 512 << 20, Output: 64 << 20}})
	if err != nil {
		return nil, err
	}
	if res.Error != nil {
		return nil, fmt.Errorf("%s: %s", res.Error.Kind, res.Error.Message)
	}
	var infos []handlerInfo
	if err := json.Unmarshal([]byte(res.Stdout), &infos); err != nil || len(infos) != len(ss) {
		return nil, fmt.Errorf("unexpected report %.200q", res.Stdout)
	}
	return infos, nil
}

// signatureProblems says where the handler and its input schema disagree,
// so that no input the schema accepts makes the call itself fail.
func signatureProblems(s *Skill, h handlerInfo) []string {
	if h.Error != "" {
		return []string{h.Error}
	}
	var top struct {
		Properties            map[string]json.RawMessage `json:"properties"`
		Required              []string                   `json:"required"`
		AdditionalProperties  json.RawMessage            `json:"additionalProperties"`
		UnevaluatedProperties json.RawMessage            `json:"unevaluatedProperties"`
	}
	json.Unmarshal(s.InputSchema, &top)
	var bad []string
	for _, p := range h.Required {
		if !slices.Contains(top.Required, p) {
			bad = append(bad, fmt.Sprintf("parameter %q of %s has no default, so the input schema must list it in \"required\"", p, s.fn))
		}
	}
	if !h.Kwargs {
		var props []string
		for p := range top.Properties {
			props = append(props, p)
		}
		sort.Strings(props)
		for _, p := range props {
			if !slices.Contains(h.Params, p) {
				bad = append(bad, fmt.Sprintf("input property %q is not a parameter of %s (which takes no **kwargs)", p, s.fn))
			}
		}
		closed := string(top.AdditionalProperties) == "false" || string(top.UnevaluatedProperties) == "false"
		if !closed {
			bad = append(bad, fmt.Sprintf("the input schema must set \"additionalProperties\": false, since %s takes no **kwargs", s.fn))
		}
	}
	return bad
}
