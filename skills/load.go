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
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/internal/jsonschema"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/tiers"
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
// that did not load. It is safe for concurrent use. Start returns it while
// the skills are still being checked: each appears as soon as it passes, so
// a slow or broken skill never holds up the others.
type Registry struct {
	done chan struct{} // closed when loading is over
	opts LoadOptions

	mu       sync.RWMutex
	skills   map[string]*Skill
	names    []string       // sorted
	problems []Problem      // sorted by path
	pending  map[string]int // by name: the directories still being checked
	groups   map[string][]*Skill
	err      error // why loading stopped early

	// The skills registered over the API (LoadOptions.Registered).
	registered map[string][]*Skill       // by name, by version precedence
	disabled   map[string]bool           // by versionKey
	regPending map[string]int            // by name: versions still being checked
	refused    map[string]refusedVersion // by versionKey: versions that did not pass
	// changing serializes the changes to the registered skills (Register,
	// SetDisabled, Delete, Sync), so Sync never undoes a change it did not
	// read.
	changing sync.Mutex
}

// Get returns the skill called name as it runs by default: the skills
// directory's, else its newest enabled registered version.
func (r *Registry) Get(name string) (*Skill, bool) {
	v, ok := r.Find(name, "")
	if !ok || v.Disabled {
		return nil, false
	}
	return v.Skill, true
}

// Skills returns the skills that run by default (Get), sorted by name.
func (r *Registry) Skills() []*Skill {
	var out []*Skill
	for _, n := range r.Names() {
		if s, ok := r.Get(n); ok {
			out = append(out, s)
		}
	}
	return out
}

// Problems lists why each broken skill did not load: every reason, with the
// path of the file at fault, sorted by path.
func (r *Registry) Problems() []Problem {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := slices.Clone(r.problems)
	for _, f := range r.refused {
		out = append(out, f.problems...)
	}
	for name, vs := range r.registered {
		if dir, ok := r.skills[name]; ok {
			out = append(out, Problem{Path: registeredPath(name, vs[0].Version), Skill: name,
				Reason: fmt.Sprintf("name %q is also a skill of the skills directory (%s), which is served instead of its registered versions", name, dir.Dir)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Pending returns the names of the skills still being checked, sorted.
func (r *Registry) Pending() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.pending)+len(r.regPending))
	for n := range r.pending {
		names = append(names, n)
	}
	for n := range r.regPending {
		if r.pending[n] == 0 {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// Loading reports whether a skill called name is still being checked.
func (r *Registry) Loading(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.pending[name] > 0 || r.regPending[name] > 0
}

// Loaded reports whether loading is over: every skill loaded or refused.
func (r *Registry) Loaded() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// Wait waits until every skill is loaded or refused, or ctx is done. The
// error is ctx's, or the one that stopped loading early (Start's ctx done).
func (r *Registry) Wait(ctx context.Context) error {
	select {
	case <-r.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.err
}

// DefaultSkillTimeout is LoadOptions.SkillTimeout's default.
const DefaultSkillTimeout = 10 * time.Second

// LoadOptions configure Load and Start.
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
	// SkillTimeout bounds the check of one skill's handler; a skill whose
	// check takes longer is refused. 0 means DefaultSkillTimeout.
	SkillTimeout time.Duration
	// Registered, when set, is the store of the skills registered over the
	// API (a provenance.Store is one): Start loads them beside the
	// directory's, each version checked as a directory's skill is, and
	// Register, SetDisabled and Delete change them.
	Registered provenance.Skills
	// SyncInterval, when positive (and with Registered), is how often the
	// registry reads Registered again once loaded, to pick up what other
	// replicas registered, disabled or deleted, until Start's ctx is done.
	SyncInterval time.Duration
	// Tiers are the trust tiers a skill.yaml's tier: names (the
	// executor's); nil means tiers.Defaults().
	Tiers *tiers.Set
}

// LoadDir loads every skill in the subdirectories of dir; see Load.
func LoadDir(ctx context.Context, dir string, opts LoadOptions) (*Registry, error) {
	r, err := StartDir(ctx, dir, opts)
	if err != nil {
		return nil, err
	}
	return r, r.Wait(ctx)
}

// StartDir starts loading the skills in the subdirectories of dir; see
// Start. A dir that holds a skill.yaml is taken for one skill and loaded
// alone.
func StartDir(ctx context.Context, dir string, opts LoadOptions) (*Registry, error) {
	d, err := HostDir(dir)
	if err != nil {
		return nil, err
	}
	return StartDirs(ctx, []Dir{d}, opts)
}

// oneDir is fsys with only one of its top-level directories listed.
type oneDir struct {
	fs.FS
	name string
}

func (o oneDir) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := fs.ReadDir(o.FS, name)
	if name != "." || err != nil {
		return entries, err
	}
	return slices.DeleteFunc(entries, func(e fs.DirEntry) bool { return e.Name() != o.name }), nil
}

// Load loads every skill in the top-level directories of fsys (directories
// whose names start with "." or "_" are skipped), and returns when each is
// loaded or refused. Each is checked whole: skill.yaml's fields and types,
// both schemas compile within their bounds, the handler parses and defines
// its function, names are unique. A broken skill is left out and its
// problems recorded; the error is for a directory that cannot be read at
// all, or ctx done before the end.
func Load(ctx context.Context, fsys fs.FS, opts LoadOptions) (*Registry, error) {
	r, err := Start(ctx, fsys, opts)
	if err != nil {
		return nil, err
	}
	return r, r.Wait(ctx)
}

// Start reads every skill.yaml in fsys's top-level directories and returns;
// the rest of Load's checks go on in the background, a few skills at a time,
// each bounded: its files by size and shape, its handler's check by
// LoadOptions.SkillTimeout. A skill appears in the registry when it passes
// (Pending lists the names still being checked); Wait waits for the end.
// Until ctx is done, that is: then loading stops.
func Start(ctx context.Context, fsys fs.FS, opts LoadOptions) (*Registry, error) {
	if opts.Checker == nil {
		return nil, errors.New("skills: LoadOptions.Checker is required")
	}
	if opts.SkillTimeout <= 0 {
		opts.SkillTimeout = DefaultSkillTimeout
	}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	l := &loader{opts: opts, r: &Registry{done: make(chan struct{}), opts: opts, skills: map[string]*Skill{},
		pending: map[string]int{}, groups: map[string][]*Skill{}, registered: map[string][]*Skill{},
		disabled: map[string]bool{}, regPending: map[string]int{}, refused: map[string]refusedVersion{}}}
	l.union, _ = fsys.(*union)
	var todo []candidate
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || strings.HasPrefix(e.Name(), "_") {
			continue
		}
		c := l.readManifest(fsys, l.rootOf(e.Name()), e.Name())
		if c.decoded {
			l.r.pending[c.skill.Name]++
		}
		todo = append(todo, c)
	}
	if opts.Registered != nil {
		all, err := opts.Registered.RegisteredSkills(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrRegistered, err)
		}
		for _, rs := range all {
			c := l.registeredCandidate(rs)
			if c.decoded {
				l.r.regPending[rs.Name]++
			}
			todo = append(todo, c)
		}
	}
	go func() {
		l.run(ctx, todo)
		if opts.Registered != nil && opts.SyncInterval > 0 {
			l.r.syncEvery(ctx, opts.SyncInterval)
		}
	}()
	return l.r, nil
}

// loader loads skills into one registry.
type loader struct {
	opts  LoadOptions
	r     *Registry
	union *union // several sources (StartDirs): each directory's root
}

// candidate is a skill directory on its way through the checks.
type candidate struct {
	skill    *Skill // Dir is the directory's name in fsys
	fsys     fs.FS
	root     string // how the directory holding the skill is named in problems' paths
	decoded  bool   // skill.yaml decoded, so the skill has a name and a handler to check
	problems []Problem
	// reg is the registered version the candidate is, or nil for one of
	// the skills directory.
	reg *provenance.RegisteredSkill
}

// where names a file of the candidate as users know it.
func (c *candidate) where(elem ...string) string {
	return filepath.Join(append([]string{c.root}, elem...)...)
}

func (c *candidate) fail(file, format string, args ...any) {
	c.problems = append(c.problems, Problem{Path: c.where(c.skill.Dir, file), Skill: c.skill.Name, Reason: fmt.Sprintf(format, args...)})
}

// run checks the candidates on a few workers, and closes r.done.
func (l *loader) run(ctx context.Context, todo []candidate) {
	defer close(l.r.done)
	work := make(chan candidate)
	var wg sync.WaitGroup
	for range max(2, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for c := range work {
				l.check(ctx, &c)
				l.finish(c)
			}
		})
	}
feed:
	for _, c := range todo {
		select {
		case work <- c:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if ctx.Err() != nil {
		l.r.mu.Lock()
		l.r.err = fmt.Errorf("skills: loading: %w", ctx.Err())
		clear(l.r.pending)
		clear(l.r.regPending)
		l.r.mu.Unlock()
	}
}

// readManifest reads and checks the skill.yaml of dir in fsys.
func (l *loader) readManifest(fsys fs.FS, root, dir string) candidate {
	c := candidate{skill: &Skill{Dir: dir}, fsys: fsys, root: root}
	raw, err := readCapped(fsys, path.Join(dir, ManifestFile), maxManifestBytes)
	if err != nil {
		if inner := nestedSkills(fsys, dir); len(inner) > 0 {
			c.fail(ManifestFile, "%v, but %s holds skill directories (%s): give %s as the skills directory", err, dir,
				strings.Join(inner, ", "), c.where(dir))
			return c
		}
		c.fail(ManifestFile, "%v", err)
		return c
	}
	if err := checkShape(raw); err != nil {
		c.fail(ManifestFile, "%v", err)
		return c
	}
	var m manifest
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	err = dec.Decode(&m)
	var te *yaml.TypeError
	switch {
	case errors.Is(err, io.EOF):
		c.fail(ManifestFile, "empty")
		return c
	case errors.As(err, &te):
		// yaml.v3 decodes what it can past type errors: report those and
		// every other problem at once, not one per round of fixing.
		problems, fields := yamlTypeProblems(raw, te.Errors)
		for _, p := range problems {
			c.fail(ManifestFile, "%s", p)
		}
		for _, reason := range m.check(c.skill, l.opts) {
			if !concerns(reason, fields) {
				c.fail(ManifestFile, "%s", reason)
			}
		}
		return c
	case err != nil:
		c.fail(ManifestFile, "%s", strings.TrimPrefix(flatten(err.Error()), "yaml: "))
		return c
	}
	c.decoded = true
	for _, reason := range m.check(c.skill, l.opts) {
		c.fail(ManifestFile, "%s", reason)
	}
	return c
}

// nestedSkills names dir's subdirectories that hold a skill.yaml: dir is a
// directory of skills itself, one level too high for the one given.
func nestedSkills(fsys fs.FS, dir string) []string {
	entries, _ := fs.ReadDir(fsys, dir)
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			if _, err := fs.Stat(fsys, path.Join(dir, e.Name(), ManifestFile)); err == nil {
				names = append(names, e.Name())
			}
		}
	}
	return names
}

// check does the rest: the schemas, the handler's source, and (if all
// else is well) the handler itself.
func (l *loader) check(ctx context.Context, c *candidate) {
	s := c.skill
	if !c.decoded {
		return // nothing else to go by
	}
	if raw, err := readCapped(c.fsys, path.Join(s.Dir, SchemaFile), maxSchemaBytes); err != nil {
		c.fail(SchemaFile, "%v", err)
	} else {
		for _, reason := range s.loadSchemas(raw) {
			c.fail(SchemaFile, "%s", reason)
		}
	}
	if s.module != "" {
		file := s.module + ".py"
		src, err := readCapped(c.fsys, path.Join(s.Dir, file), maxSourceBytes)
		if err != nil {
			c.fail(file, "%v (handler %q)", err, s.Handler)
		} else {
			s.Source, s.CodeHash = string(src), provenance.HashBytes(src)
		}
	}
	if len(c.problems) > 0 || ctx.Err() != nil {
		return
	}
	for _, reason := range l.checkHandler(ctx, s) {
		c.fail(s.module+".py", "%s", reason)
	}
}

// finish records how c went. Skills sharing a name are decided together,
// once the last of them is checked: one that passed is served only if it
// is the only one that did.
func (l *loader) finish(c candidate) {
	r := l.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.reg != nil {
		r.finishRegistered(c)
		return
	}
	r.problems = append(r.problems, c.problems...)
	defer func() {
		sort.SliceStable(r.problems, func(i, j int) bool { return r.problems[i].Path < r.problems[j].Path })
	}()
	name := c.skill.Name
	if !c.decoded || r.pending[name] == 0 { // no name, or loading was stopped
		return
	}
	if len(c.problems) == 0 {
		r.groups[name] = append(r.groups[name], c.skill)
	}
	if r.pending[name]--; r.pending[name] > 0 {
		return
	}
	delete(r.pending, name)
	ss := r.groups[name]
	delete(r.groups, name)
	switch {
	case len(ss) == 1:
		s := ss[0]
		s.Dir = filepath.Join(l.rootOf(s.Dir), s.Dir) // the path users recognise
		r.skills[name] = s
		i, _ := slices.BinarySearch(r.names, name)
		r.names = slices.Insert(r.names, i, name)
	case len(ss) > 1: // ambiguous: serve none of them
		for _, s := range ss {
			var others []string
			for _, o := range ss {
				if o != s {
					others = append(others, filepath.Join(l.rootOf(o.Dir), o.Dir))
				}
			}
			r.problems = append(r.problems, Problem{Path: filepath.Join(l.rootOf(s.Dir), s.Dir, ManifestFile), Skill: name,
				Reason: fmt.Sprintf("name %q is also used by %s", name, strings.Join(others, ", "))})
		}
	}
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

// checkHandler parses s's handler in a sandbox run of its own, bounded by
// SkillTimeout, and checks the function's parameters against the input
// schema. It lists what is wrong.
func (l *loader) checkHandler(ctx context.Context, s *Skill) []string {
	in, err := json.Marshal([]map[string]string{{"filename": s.module + ".py", "source": s.Source, "function": s.fn}})
	if err != nil {
		return []string{err.Error()}
	}
	res, err := l.opts.Checker.Run(ctx, wasmpy.Job{Code: checkHandlersPy, Filename: "<check_handlers>", Stdin: bytes.NewReader(in),
		Limits: wasmpy.Limits{Timeout: l.opts.SkillTimeout, Memory: 256 << 20, Output: 1 << 20}})
	switch {
	case err != nil:
		return []string{"the checker could not run: " + err.Error()}
	case res.Error != nil && res.Error.Kind == wasmpy.KindTimeout:
		return []string{fmt.Sprintf("checking the handler took longer than %v (the limit per skill)", l.opts.SkillTimeout)}
	case res.Error != nil:
		return []string{fmt.Sprintf("the checker could not parse it: %s: %s", res.Error.Kind, res.Error.Message)}
	}
	var infos []handlerInfo
	if err := json.Unmarshal([]byte(res.Stdout), &infos); err != nil || len(infos) != 1 {
		return []string{fmt.Sprintf("the checker could not parse it: unexpected report %.200q", res.Stdout)}
	}
	return signatureProblems(s, infos[0])
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
