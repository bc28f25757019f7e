package skills

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"testing/fstest"
	"time"

	"github.com/wasmpy/wasmpy/provenance"
)

// The codes of the errors registering and changing skill versions returns
// (as *Error).
const (
	CodeInvalidSkill   = "invalid_skill"   // the files do not make a skill that loads: Problems says why
	CodeSkillExists    = "skill_exists"    // the name and version are registered already, or the name is a directory's skill
	CodeSkillDisabled  = "skill_disabled"  // the version asked for is disabled
	CodeUnknownSkill   = "unknown_skill"   // no such skill or version
	CodeNotRegistered  = "not_registered"  // the skill is the skills directory's: it cannot be changed over the API
	CodeNoRegistration = "no_registration" // there is no store to keep registered skills
)

// ErrRegistered wraps the store's error when the registered skills cannot
// be read.
var ErrRegistered = errors.New("skills: reading the registered skills")

// Registration is how a skill version was registered over the API.
type Registration struct {
	Hash string    `json:"hash"` // of its files (provenance.HashFiles)
	By   string    `json:"registered_by"`
	At   time.Time `json:"registered_at"`
}

// Version is a skill at one version, with whether it is disabled (only a
// registered version can be).
type Version struct {
	*Skill
	Disabled bool
}

// refusedVersion is a registered version that did not pass the checks
// here (a replica configured otherwise, say), kept so that Sync does not
// check it again until its files change.
type refusedVersion struct {
	hash     string
	problems []Problem
}

func versionKey(name, version string) string { return name + "@" + version }

// registeredPath is how problems name a registered version.
func registeredPath(name, version string) string { return path.Join("(registered)", name, version) }

// Names returns the names of every skill, loaded from the directory or
// registered (even with every version disabled), sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := slices.Clone(r.names)
	for n := range r.registered {
		if _, ok := r.skills[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// Find returns the skill called name at version. Version "" means the one
// that runs by default: the skills directory's, else the newest enabled
// registered version, else (every version disabled) the newest, disabled.
func (r *Registry) Find(name, version string) (Version, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if s, ok := r.skills[name]; ok {
		return Version{Skill: s}, version == "" || version == s.Version
	}
	vs := r.registered[name]
	if len(vs) == 0 {
		return Version{}, false
	}
	if version != "" {
		i := slices.IndexFunc(vs, func(s *Skill) bool { return s.Version == version })
		if i < 0 {
			return Version{}, false
		}
		return Version{Skill: vs[i], Disabled: r.disabled[versionKey(name, version)]}, true
	}
	for i := len(vs) - 1; i >= 0; i-- {
		if !r.disabled[versionKey(name, vs[i].Version)] {
			return Version{Skill: vs[i]}, true
		}
	}
	return Version{Skill: vs[len(vs)-1], Disabled: true}, true
}

// Versions returns every version of the skill called name, by precedence:
// the skills directory's one, or the registered ones.
func (r *Registry) Versions(name string) []Version {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if s, ok := r.skills[name]; ok {
		return []Version{{Skill: s}}
	}
	var out []Version
	for _, s := range r.registered[name] {
		out = append(out, Version{Skill: s, Disabled: r.disabled[versionKey(name, s.Version)]})
	}
	return out
}

// versionNames lists the versions of name for a message: "1.0.0, 2.0.0".
func (r *Registry) versionNames(name string) string {
	var vs []string
	for _, v := range r.Versions(name) {
		vs = append(vs, v.Version)
	}
	return strings.Join(vs, ", ")
}

// CheckFiles checks a skill given as its files (file name to content), as
// loading a skill directory does, and returns the skill or every problem
// with it. The files must be exactly skill.yaml, schema.json and the
// handler's module. Problems name the files ("skill.yaml").
func CheckFiles(ctx context.Context, files map[string][]byte, opts LoadOptions) (*Skill, []Problem) {
	l := &loader{opts: opts}
	c := l.filesCandidate(files, "")
	if c.decoded {
		l.check(ctx, &c)
	}
	if len(c.problems) > 0 {
		return nil, c.problems
	}
	return c.skill, nil
}

// filesCandidate reads a skill's files, named in problems under root.
func (l *loader) filesCandidate(files map[string][]byte, root string) candidate {
	fsys := fstest.MapFS{}
	var odd []string
	for name, b := range files {
		if name == "." || strings.ContainsAny(name, `/\`) || !fs.ValidPath(name) {
			odd = append(odd, name)
			continue
		}
		fsys[name] = &fstest.MapFile{Data: b, Mode: 0o444}
	}
	c := l.readManifest(fsys, root, ".")
	for _, name := range odd {
		c.problems = append(c.problems, Problem{Path: c.where(name), Skill: c.skill.Name, Reason: "not a plain file name"})
	}
	var extra []string
	for name := range fsys {
		handler := name == c.skill.module+".py" || c.skill.module == "" && path.Ext(name) == ".py" // any module, if skill.yaml does not say which
		if name != ManifestFile && name != SchemaFile && !handler {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	for _, name := range extra {
		c.problems = append(c.problems, Problem{Path: c.where(name), Skill: c.skill.Name,
			Reason: "unexpected file: a skill is skill.yaml, schema.json and its handler's module (the module handler names, .py)"})
	}
	return c
}

// registeredCandidate is a stored version on its way through the checks.
func (l *loader) registeredCandidate(rs *provenance.RegisteredSkill) candidate {
	c := l.filesCandidate(rs.Files, registeredPath(rs.Name, rs.Version))
	c.reg = rs
	c.skill.Dir = "."
	if c.decoded && (c.skill.Name != rs.Name || c.skill.Version != rs.Version) {
		c.fail(ManifestFile, "names %s %s, but is registered as %s %s", c.skill.Name, c.skill.Version, rs.Name, rs.Version)
		c.decoded = false
	}
	c.skill.Registration = &Registration{Hash: rs.Hash, By: rs.RegisteredBy, At: rs.RegisteredAt}
	return c
}

// finishRegistered records how a registered version's check went; r.mu is
// held.
func (r *Registry) finishRegistered(c candidate) {
	name, key := c.reg.Name, versionKey(c.reg.Name, c.reg.Version)
	if c.decoded && r.regPending[name] > 0 {
		if r.regPending[name]--; r.regPending[name] == 0 {
			delete(r.regPending, name)
		}
	}
	if len(c.problems) > 0 || !c.decoded {
		for i := range c.problems {
			c.problems[i].Skill = name
		}
		r.refused[key] = refusedVersion{hash: c.reg.Hash, problems: c.problems}
		return
	}
	delete(r.refused, key)
	c.skill.Dir = registeredPath(name, c.reg.Version)
	r.addVersion(c.skill, c.reg.Disabled)
}

// addVersion serves a registered version; r.mu is held.
func (r *Registry) addVersion(s *Skill, disabled bool) {
	vs := slices.DeleteFunc(r.registered[s.Name], func(o *Skill) bool { return o.Version == s.Version })
	i, _ := slices.BinarySearchFunc(vs, s, func(a, b *Skill) int { return compareVersions(a.Version, b.Version) })
	r.registered[s.Name] = slices.Insert(vs, i, s)
	r.disabled[versionKey(s.Name, s.Version)] = disabled
}

// removeVersion stops serving a registered version; r.mu is held.
func (r *Registry) removeVersion(name, version string) {
	vs := slices.DeleteFunc(r.registered[name], func(o *Skill) bool { return o.Version == version })
	if len(vs) == 0 {
		delete(r.registered, name)
	} else {
		r.registered[name] = vs
	}
	delete(r.disabled, versionKey(name, version))
}

// store is the store of registered skills, or an error saying there is
// none.
func (r *Registry) store() (provenance.Skills, error) {
	if r.opts.Registered == nil {
		return nil, &Error{Code: CodeNoRegistration, Message: "skills cannot be registered here: there is no store to keep them"}
	}
	return r.opts.Registered, nil
}

// Register checks a skill given as its files (as CheckFiles does), stores
// it as registered by by, and serves it. The error is an *Error:
// invalid_skill with every problem, or skill_exists for a name and
// version registered already (never overwritten) or a name the skills
// directory has; or the store's.
func (r *Registry) Register(ctx context.Context, files map[string][]byte, by string) (*Skill, error) {
	st, err := r.store()
	if err != nil {
		return nil, err
	}
	s, problems := CheckFiles(ctx, files, r.opts)
	if problems != nil {
		reasons := make([]string, len(problems))
		for i, p := range problems {
			reasons[i] = p.String()
		}
		return nil, &Error{Code: CodeInvalidSkill, Problems: problems,
			Message: fmt.Sprintf("the skill does not load (%d problems): %s", len(problems), strings.Join(reasons, "; "))}
	}
	if dir, ok := r.dirSkill(s.Name); ok {
		return nil, &Error{Code: CodeSkillExists, Message: fmt.Sprintf("skill %q is a skill of the skills directory (%s): register it under another name", s.Name, dir)}
	}
	r.changing.Lock()
	defer r.changing.Unlock()
	rs := &provenance.RegisteredSkill{Name: s.Name, Version: s.Version, Files: files, RegisteredBy: by}
	if err := st.RegisterSkill(ctx, rs); err != nil {
		if errors.Is(err, provenance.ErrExists) {
			return nil, &Error{Code: CodeSkillExists, Message: fmt.Sprintf("skill %s version %s is registered already: a version is never overwritten; register a new version", s.Name, s.Version)}
		}
		return nil, err
	}
	s.Registration = &Registration{Hash: rs.Hash, By: rs.RegisteredBy, At: rs.RegisteredAt}
	s.Dir = registeredPath(s.Name, s.Version)
	r.mu.Lock()
	r.addVersion(s, false)
	delete(r.refused, versionKey(s.Name, s.Version))
	r.mu.Unlock()
	return s, nil
}

// dirSkill reports whether the skills directory has (or is still checking)
// a skill called name, and where.
func (r *Registry) dirSkill(name string) (string, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if s, ok := r.skills[name]; ok {
		return s.Dir, true
	}
	return r.opts.Root, r.pending[name] > 0
}

// registeredVersion checks that name at version is a registered version,
// else says why not.
func (r *Registry) registeredVersion(name, version string) error {
	if dir, ok := r.dirSkill(name); ok {
		return &Error{Code: CodeNotRegistered, Message: fmt.Sprintf("skill %q is a skill of the skills directory (%s), not registered over the API: change it there", name, dir)}
	}
	if _, ok := r.Find(name, version); !ok {
		return r.Unknown(name, version)
	}
	return nil
}

// Unknown is the error for a skill or version the registry does not have
// (an *Error, unknown_skill), naming the versions it has.
func (r *Registry) Unknown(name, version string) error {
	if vs := r.versionNames(name); vs != "" {
		return &Error{Code: CodeUnknownSkill, Message: fmt.Sprintf("skill %q has no version %q (its versions: %s)", name, version, vs)}
	}
	return &Error{Code: CodeUnknownSkill, Message: fmt.Sprintf("no skill %q", name)}
}

// SetDisabled disables or enables a registered version for by. A disabled
// version is listed but does not run.
func (r *Registry) SetDisabled(ctx context.Context, name, version string, disabled bool, by string) error {
	return r.change(ctx, name, version, func(st provenance.Skills) error {
		if err := st.SetSkillDisabled(ctx, name, version, disabled, by); err != nil {
			return err
		}
		r.mu.Lock()
		r.disabled[versionKey(name, version)] = disabled
		r.mu.Unlock()
		return nil
	})
}

// Delete removes a registered version for by.
func (r *Registry) Delete(ctx context.Context, name, version, by string) error {
	return r.change(ctx, name, version, func(st provenance.Skills) error {
		if err := st.DeleteSkill(ctx, name, version, by); err != nil {
			return err
		}
		r.mu.Lock()
		r.removeVersion(name, version)
		r.mu.Unlock()
		return nil
	})
}

// change runs do on the store, for a registered version.
func (r *Registry) change(ctx context.Context, name, version string, do func(provenance.Skills) error) error {
	st, err := r.store()
	if err != nil {
		return err
	}
	r.changing.Lock()
	defer r.changing.Unlock()
	if err := r.registeredVersion(name, version); err != nil {
		return err
	}
	err = do(st)
	if errors.Is(err, provenance.ErrNotFound) { // deleted on another replica since the last Sync
		r.mu.Lock()
		r.removeVersion(name, version)
		r.mu.Unlock()
		return r.Unknown(name, version)
	}
	return err
}

// Runnable returns what to run for s, if it may run now. A registered
// version is asked of the store, which has the last word: one disabled or
// deleted on another replica stops at once, not at the next Sync, and one
// replaced there (deleted and registered again, with other files) is loaded
// again first. The error is an *Error (skill_disabled, unknown_skill) or
// the store's.
func (r *Registry) Runnable(ctx context.Context, s *Skill) (*Skill, error) {
	if s.Registration == nil || r.opts.Registered == nil {
		return s, nil
	}
	hash, disabled, err := r.opts.Registered.SkillState(ctx, s.Name, s.Version)
	switch {
	case errors.Is(err, provenance.ErrNotFound):
		r.mu.Lock()
		r.removeVersion(s.Name, s.Version)
		r.mu.Unlock()
		return nil, &Error{Code: CodeUnknownSkill, Message: fmt.Sprintf("skill %s version %s was deleted", s.Name, s.Version)}
	case err != nil:
		return nil, err
	}
	if hash != s.Registration.Hash {
		if err := r.Sync(ctx); err != nil {
			return nil, err
		}
		v, ok := r.Find(s.Name, s.Version)
		if !ok || v.Registration == nil || v.Registration.Hash != hash {
			return nil, &Error{Code: CodeUnknownSkill, Message: fmt.Sprintf("skill %s version %s was registered again with files that do not load here", s.Name, s.Version)}
		}
		s = v.Skill
	}
	r.mu.Lock()
	if _, ok := r.disabled[versionKey(s.Name, s.Version)]; ok {
		r.disabled[versionKey(s.Name, s.Version)] = disabled
	}
	r.mu.Unlock()
	if disabled {
		return nil, disabledError(s.Name, s.Version)
	}
	return s, nil
}

func disabledError(name, version string) error {
	return &Error{Code: CodeSkillDisabled, Message: fmt.Sprintf("skill %s version %s is disabled; an admin can enable it again", name, version)}
}

// Sync reads the registered skills again: it serves the versions other
// replicas registered (once they pass the checks here), drops the ones
// deleted, and takes their disabled state.
func (r *Registry) Sync(ctx context.Context) error {
	st, err := r.store()
	if err != nil {
		return err
	}
	r.changing.Lock()
	defer r.changing.Unlock()
	all, err := st.RegisteredSkills(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRegistered, err)
	}
	stored := map[string]*provenance.RegisteredSkill{}
	for _, rs := range all {
		stored[versionKey(rs.Name, rs.Version)] = rs
	}
	l := &loader{opts: r.opts, r: r}
	var todo []candidate
	r.mu.Lock()
	for name, vs := range r.registered {
		for _, s := range slices.Clone(vs) {
			rs, ok := stored[versionKey(name, s.Version)]
			if !ok || rs.Hash != s.Registration.Hash {
				r.removeVersion(name, s.Version)
			}
		}
	}
	for key, f := range r.refused {
		if rs, ok := stored[key]; !ok || rs.Hash != f.hash {
			delete(r.refused, key)
		}
	}
	for key, rs := range stored {
		if _, ok := r.disabled[key]; ok {
			r.disabled[key] = rs.Disabled
			continue
		}
		if _, ok := r.refused[key]; !ok {
			todo = append(todo, l.registeredCandidate(rs))
		}
	}
	r.mu.Unlock()
	for _, c := range todo {
		if c.decoded {
			l.check(ctx, &c)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.mu.Lock()
		r.finishRegistered(c)
		r.mu.Unlock()
	}
	return nil
}

// Audit returns the audit trail of the registered skills f selects, newest
// first.
func (r *Registry) Audit(ctx context.Context, f provenance.AuditFilter) ([]*provenance.AuditEntry, error) {
	st, err := r.store()
	if err != nil {
		return nil, err
	}
	return st.SkillAudit(ctx, f)
}

// syncEvery runs Sync every interval until ctx is done. A Sync that fails
// (the store away for a while) is tried again at the next tick.
func (r *Registry) syncEvery(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.Sync(ctx)
		}
	}
}
