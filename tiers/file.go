package tiers

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/internal/units"
)

// Error is what is wrong with a tiers file: every problem found, each with
// its line.
type Error struct {
	File     string // "" when parsed from bytes
	Problems []Problem
}

// Problem is one thing wrong with a tiers file.
type Problem struct {
	Line    int    `json:"line"`    // 1-based; 0 when it concerns the whole file
	Path    string `json:"path"`    // where in the document: tiers[1].limits.timeout
	Message string `json:"message"` // what is wrong and what would be right
}

func (p Problem) String() string {
	where := p.Path
	if p.Line > 0 {
		where = fmt.Sprintf("line %d: %s", p.Line, p.Path)
	}
	if where == "" {
		return p.Message
	}
	return where + ": " + p.Message
}

func (e *Error) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.String()
	}
	name := e.File
	if name == "" {
		name = "tiers file"
	}
	return fmt.Sprintf("tiers: %s: %s", name, strings.Join(msgs, "; "))
}

// Bounds on a tiers file, far beyond what one needs.
const (
	maxFileBytes = 1 << 20
	maxNodes     = 10000
)

// Load reads a tiers file (see Parse).
func Load(path string) (*Set, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tiers: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("tiers: %w", err)
	}
	if len(data) > maxFileBytes {
		return nil, &Error{File: path, Problems: []Problem{{Message: fmt.Sprintf("larger than %d bytes", maxFileBytes)}}}
	}
	s, err := Parse(data)
	if e, ok := err.(*Error); ok {
		e.File = path
	}
	return s, err
}

// Parse reads a tiers file: the complete list of tiers, least trusted
// first.
//
//	tiers:
//	  - name: sandbox
//	    limits: {timeout: 5s, memory: 64MiB, output: 1MiB, fuel: 2000000000}
//	    capabilities: [submit_result]
//	    imports: [math, json]      # or: any
//	    validation: strict         # strict, standard or syntax
//	  - name: ci
//	    extends: testing           # a built-in tier or one above: what is not given is its
//	    limits: {timeout: 60s}
//
// A tier that extends none gives every field but description and fuel
// (absent: unmetered). Every problem is reported, each with its line, in
// an *Error.
func Parse(data []byte) (*Set, error) {
	p := &parser{}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		line := 0
		if _, err := fmt.Sscanf(msg, "line %d:", &line); err == nil {
			msg = strings.TrimSpace(msg[strings.Index(msg, ":")+1:])
		}
		return nil, &Error{Problems: []Problem{{Line: line, Message: "not YAML: " + msg}}}
	}
	if len(doc.Content) == 0 {
		return nil, &Error{Problems: []Problem{{Message: "empty: want a mapping with a tiers list"}}}
	}
	if p.checkShape(doc.Content[0]); len(p.problems) > 0 {
		return nil, &Error{Problems: p.problems}
	}
	set := p.file(doc.Content[0])
	if len(p.problems) > 0 {
		return nil, &Error{Problems: p.problems}
	}
	return set, nil
}

type parser struct {
	problems []Problem
	nodes    int
	names    []string // of the tiers read so far
}

func (p *parser) fail(n *yaml.Node, path, format string, a ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.problems = append(p.problems, Problem{Line: line, Path: path, Message: fmt.Sprintf(format, a...)})
}

// checkShape refuses aliases (which can expand a small file into a huge
// one) and more nodes than any tiers file needs.
func (p *parser) checkShape(n *yaml.Node) {
	if p.nodes++; p.nodes > maxNodes {
		if p.nodes == maxNodes+1 {
			p.fail(n, "", "more than %d YAML nodes", maxNodes)
		}
		return
	}
	if n.Kind == yaml.AliasNode {
		p.fail(n, "", "YAML aliases are not allowed")
		return
	}
	for _, c := range n.Content {
		p.checkShape(c)
	}
}

// fields checks that n is a mapping whose keys are among known, each once,
// and returns them by key.
func (p *parser) fields(n *yaml.Node, path string, known ...string) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	if n.Kind != yaml.MappingNode {
		p.fail(n, path, "want a mapping with %s", strings.Join(known, ", "))
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := join(path, k.Value)
		switch {
		case !slices.Contains(known, k.Value):
			p.fail(k, key, "unknown field (want %s)", strings.Join(known, ", "))
		case out[k.Value] != nil:
			p.fail(k, key, "given twice")
		default:
			out[k.Value] = v
		}
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

func (p *parser) file(root *yaml.Node) *Set {
	f := p.fields(root, "", "tiers")
	list := f["tiers"]
	if list == nil {
		if root.Kind == yaml.MappingNode {
			p.fail(root, "tiers", "missing: want the list of tiers, least trusted first")
		}
		return nil
	}
	if list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
		p.fail(list, "tiers", "want a non-empty list of tiers, least trusted first")
		return nil
	}
	builtin := Defaults()
	set := &Set{}
	for i, n := range list.Content {
		if t := p.tier(n, fmt.Sprintf("tiers[%d]", i), builtin, set); t != nil {
			set.tiers = append(set.tiers, t)
		}
	}
	return set
}

// tier reads one tier; earlier are the tiers before it, which it may
// extend, as it may a built-in.
func (p *parser) tier(n *yaml.Node, path string, builtin, earlier *Set) *Tier {
	f := p.fields(n, path, "name", "description", "extends", "limits", "capabilities", "imports", "validation")
	if n.Kind != yaml.MappingNode {
		return nil
	}
	bad := len(p.problems)
	t := &Tier{}
	name := p.str(f["name"], join(path, "name"))
	switch {
	case f["name"] == nil:
		p.fail(n, join(path, "name"), "missing")
	case !nameRE.MatchString(name):
		p.fail(f["name"], join(path, "name"), "%q: want lowercase letters, digits, - and _, starting with a letter (at most 32)", name)
	case slices.Contains(p.names, name):
		p.fail(f["name"], join(path, "name"), "%q is defined twice", name)
	}
	p.names = append(p.names, name)
	t.Name = name
	if e := f["extends"]; e != nil {
		base := p.str(e, join(path, "extends"))
		from, err := earlier.Lookup(base)
		if err != nil {
			from, err = builtin.Lookup(base)
		}
		if err != nil {
			p.fail(e, join(path, "extends"), "no tier %q to extend (want a built-in, %s, or a tier above this one)",
				base, strings.Join(builtin.Names(), ", "))
		} else {
			*t = *from
			t.Name, t.Description = name, ""
			t.Capabilities, t.AllowImports = slices.Clone(from.Capabilities), slices.Clone(from.AllowImports)
		}
	} else {
		for _, key := range []string{"limits", "capabilities", "imports", "validation"} {
			if f[key] == nil {
				p.fail(n, join(path, key), "missing (a tier that extends none gives it)")
			}
		}
	}
	if d := f["description"]; d != nil {
		t.Description = p.str(d, join(path, "description"))
	}
	if l := f["limits"]; l != nil {
		p.limits(l, join(path, "limits"), &t.Limits, f["extends"] == nil)
	}
	if c := f["capabilities"]; c != nil {
		t.Capabilities = []wasmpy.Capability{}
		for i, name := range p.strs(c, join(path, "capabilities")) {
			cp := wasmpy.Capability(name)
			switch {
			case !slices.Contains(wasmpy.Builtins(), cp) && cp != wasmpy.HTTPRequest:
				p.fail(c.Content[i], fmt.Sprintf("%s.capabilities[%d]", path, i), "no capability %q (want some of %s)", name, capNames())
			case slices.Contains(t.Capabilities, cp):
				p.fail(c.Content[i], fmt.Sprintf("%s.capabilities[%d]", path, i), "%q is listed twice", name)
			default:
				t.Capabilities = append(t.Capabilities, cp)
			}
		}
	}
	if im := f["imports"]; im != nil {
		if im.Kind == yaml.ScalarNode && im.Value == "any" {
			t.AllowImports = nil
		} else if im.Kind != yaml.SequenceNode {
			p.fail(im, join(path, "imports"), `want a list of modules, or "any"`)
		} else {
			t.AllowImports = []string{}
			for i, m := range p.strs(im, join(path, "imports")) {
				if !moduleRE.MatchString(m) {
					p.fail(im.Content[i], fmt.Sprintf("%s.imports[%d]", path, i), "%q is not a top-level module name", m)
				} else if !slices.Contains(t.AllowImports, m) {
					t.AllowImports = append(t.AllowImports, m)
				}
			}
		}
	}
	if v := f["validation"]; v != nil {
		s := Strictness(p.str(v, join(path, "validation")))
		if !slices.Contains(Strictnesses(), s) {
			p.fail(v, join(path, "validation"), "%q: want %s, %s or %s", s, Strict, Standard, Syntax)
		}
		t.Validation = s
	}
	if len(p.problems) > bad {
		return nil
	}
	return t
}

var moduleRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func capNames() string {
	var names []string
	for _, c := range append(wasmpy.Builtins(), wasmpy.HTTPRequest) {
		names = append(names, string(c))
	}
	return strings.Join(names, ", ")
}

// limits reads a limits mapping into l; all says timeout, memory and
// output must be given (the tier extends none).
func (p *parser) limits(n *yaml.Node, path string, l *wasmpy.Limits, all bool) {
	f := p.fields(n, path, "timeout", "memory", "output", "fuel")
	if n.Kind != yaml.MappingNode {
		return
	}
	if all {
		for _, key := range []string{"timeout", "memory", "output"} {
			if f[key] == nil {
				p.fail(n, join(path, key), "missing (a tier that extends none gives it)")
			}
		}
	}
	if v := f["timeout"]; v != nil {
		d, err := time.ParseDuration(p.str(v, join(path, "timeout")))
		if err != nil || d <= 0 {
			p.fail(v, join(path, "timeout"), "%q: want a positive duration such as 500ms, 5s or 1m", v.Value)
		}
		l.Timeout = d
	}
	if v := f["memory"]; v != nil {
		m, err := units.ParseSize(p.str(v, join(path, "memory")))
		if err != nil || m == 0 || m > wasmpy.MaxMemory {
			p.fail(v, join(path, "memory"), "%q: want a size from 1 byte to 4GiB, such as 64MiB", v.Value)
		}
		l.Memory = m
	}
	if v := f["output"]; v != nil {
		o, err := units.ParseSize(p.str(v, join(path, "output")))
		if err != nil || o == 0 || o > 1<<30 {
			p.fail(v, join(path, "output"), "%q: want a size from 1 byte to 1GiB, such as 1MiB", v.Value)
		}
		l.Output = int(o)
	}
	if v := f["fuel"]; v != nil {
		s := p.str(v, join(path, "fuel"))
		fuel, err := strconv.ParseUint(s, 10, 64)
		if s == "none" {
			fuel, err = 0, nil
		}
		if err != nil || fuel > wasmpy.MaxFuel {
			p.fail(v, join(path, "fuel"), "%q: want a whole number of fuel units up to %d, or none (unmetered)", v.Value, uint64(wasmpy.MaxFuel))
		}
		l.Fuel = fuel
	}
}

// str reads a scalar.
func (p *parser) str(n *yaml.Node, path string) string {
	if n == nil {
		return ""
	}
	if n.Kind != yaml.ScalarNode {
		p.fail(n, path, "want a single value")
		return ""
	}
	return n.Value
}

// strs reads a list of scalars.
func (p *parser) strs(n *yaml.Node, path string) []string {
	if n.Kind != yaml.SequenceNode {
		p.fail(n, path, "want a list")
		return nil
	}
	out := make([]string, len(n.Content))
	for i, c := range n.Content {
		out[i] = p.str(c, fmt.Sprintf("%s[%d]", path, i))
	}
	return out
}
