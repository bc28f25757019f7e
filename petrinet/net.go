package petrinet

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/wasmpy/wasmpy/internal/clip"
	"github.com/wasmpy/wasmpy/internal/pyname"
)

// DefaultMaxSteps bounds a net's run when neither the net nor the caller does.
const DefaultMaxSteps = 1000

// Net is a place/transition net whose transitions run Python: the model
// behind a net artifact. Parse reads one from YAML; see the README for the
// format.
type Net struct {
	ID          string
	Name        string
	Places      []Place
	Transitions []Transition
	Arcs        []Arc
	// Variables are the initial values of the variables that inscriptions
	// and guards share (JSON-compatible values).
	Variables map[string]any
	// MaxSteps bounds the firings of a run (0 = DefaultMaxSteps).
	MaxSteps int

	idLine   int // YAML lines, for messages
	varLines map[string]int
}

// Place holds tokens; Tokens is its initial marking.
type Place struct {
	ID     string
	Name   string
	Tokens int
	Line   int // where it is defined in the YAML; 0 if not from YAML
}

// Transition runs its Inscription (Python statements) when it fires. It is
// enabled when its input places hold enough tokens and its Guard (a Python
// expression; "" = always) is true.
type Transition struct {
	ID          string
	Name        string
	Inscription string
	Guard       string
	// Requires names the packages the inscription needs (pip style; a
	// version specifier is allowed). Only the standard library the
	// interpreter carries is available in the sandbox.
	Requires []string
	Line     int // where it is defined in the YAML; 0 if not from YAML

	inscriptionLine, guardLine, requiresLine int // YAML line of the first line of each
}

// Arc connects a place to a transition (the transition consumes Weight
// tokens) or a transition to a place (it produces them).
type Arc struct {
	Source string
	Target string
	Weight int // 0 means 1
	Line   int
}

// Error lists what is wrong with a net, each problem naming the element
// and its line.
type Error struct {
	Problems []Problem
}

// Problem is one thing wrong with a net.
type Problem struct {
	Line    int    // in the YAML; 0 when unknown
	Element string // e.g. `transition "say"`, `arc 2 (start -> say)`, "net"
	Message string
}

func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Element != "" {
		b.WriteString(p.Element + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

func (e *Error) Error() string {
	if len(e.Problems) == 1 {
		return "petrinet: " + e.Problems[0].String()
	}
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return fmt.Sprintf("petrinet: %d problems: %s", len(e.Problems), strings.Join(parts, "; "))
}

type problems []Problem

func (ps *problems) add(line int, element, format string, args ...any) {
	*ps = append(*ps, Problem{Line: line, Element: element, Message: fmt.Sprintf(format, args...)})
}

func (ps problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	sorted := append([]Problem(nil), ps...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Line < sorted[j].Line })
	return &Error{Problems: sorted}
}

var (
	idPattern  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,127}$`)
	reqPattern = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9_.-]*)\s*(\[[^\]]*\])?\s*([<>=!~][^;]*)?$`)
	yamlErrRe  = regexp.MustCompile(`^line (\d+): (.*)$`)
)

const maxTokens = 1 << 30

// Parse reads a net from YAML and checks its structure: the shape of the
// document, ids (present, well-formed, unique across places and
// transitions), tokens and weights, and that every arc joins a place and a
// transition that exist. The error is a *Error naming each problem's
// element and line. Whether inscriptions and guards parse is Check's job (it
// needs the sandbox's Python).
func Parse(data []byte) (*Net, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, yamlError(err)
	}
	var ps problems
	if doc.Kind == 0 || len(doc.Content) == 0 {
		ps.add(1, "", "empty file: want a mapping with the key net")
		return nil, ps.err()
	}
	top := fields(&ps, doc.Content[0], "the document", "net")
	netNode := top["net"]
	if netNode == nil {
		if top != nil {
			ps.add(doc.Content[0].Line, "the document", "missing the key net")
		}
		return nil, ps.err()
	}
	f := fields(&ps, netNode, "net", "id", "name", "places", "transitions", "arcs", "variables", "max_steps")
	if f == nil {
		return nil, ps.err()
	}
	n := &Net{Variables: map[string]any{}, varLines: map[string]int{}, idLine: netNode.Line}
	n.ID = str(&ps, f["id"], "net", "id")
	if f["id"] != nil {
		n.idLine = f["id"].Line
	}
	n.Name = str(&ps, f["name"], "net", "name")
	if v := f["max_steps"]; v != nil {
		n.MaxSteps = integer(&ps, v, "net", "max_steps", 1, 1<<30)
	}
	for i, pn := range seq(&ps, f["places"], "net", "places") {
		pf := fields(&ps, pn, fmt.Sprintf("place %d", i+1), "id", "name", "tokens")
		if pf == nil {
			continue
		}
		p := Place{Line: pn.Line}
		p.ID = str(&ps, pf["id"], fmt.Sprintf("place %d", i+1), "id")
		el := element("place", p.ID, i)
		p.Name = str(&ps, pf["name"], el, "name")
		if v := pf["tokens"]; v != nil {
			p.Tokens = integer(&ps, v, el, "tokens", 0, maxTokens)
		}
		n.Places = append(n.Places, p)
	}
	for i, tn := range seq(&ps, f["transitions"], "net", "transitions") {
		tf := fields(&ps, tn, fmt.Sprintf("transition %d", i+1), "id", "name", "inscription", "guard", "requires")
		if tf == nil {
			continue
		}
		t := Transition{Line: tn.Line}
		t.ID = str(&ps, tf["id"], fmt.Sprintf("transition %d", i+1), "id")
		el := element("transition", t.ID, i)
		t.Name = str(&ps, tf["name"], el, "name")
		if v := tf["inscription"]; v != nil {
			t.Inscription, t.inscriptionLine = code(&ps, v, el, "inscription")
		}
		if v := tf["guard"]; v != nil {
			t.Guard, t.guardLine = code(&ps, v, el, "guard")
		}
		if v := tf["requires"]; v != nil {
			t.requiresLine = v.Line
			if v = resolve(v); v.Kind == yaml.ScalarNode && v.Tag != "!!null" {
				t.Requires = []string{v.Value} // a single requirement
			} else {
				for _, r := range seq(&ps, v, el, "requires") {
					t.Requires = append(t.Requires, str(&ps, r, el, "requires"))
				}
			}
		}
		n.Transitions = append(n.Transitions, t)
	}
	for i, an := range seq(&ps, f["arcs"], "net", "arcs") {
		af := fields(&ps, an, fmt.Sprintf("arc %d", i+1), "id", "source", "target", "weight")
		if af == nil {
			continue
		}
		a := Arc{Line: an.Line}
		el := fmt.Sprintf("arc %d", i+1)
		a.Source = str(&ps, af["source"], el, "source")
		a.Target = str(&ps, af["target"], el, "target")
		if v := af["weight"]; v != nil {
			a.Weight = integer(&ps, v, arcElement(i, a), "weight", 1, maxTokens)
		}
		n.Arcs = append(n.Arcs, a)
	}
	if v := f["variables"]; v != nil {
		vf := fields(&ps, v, "variables", "*")
		for _, k := range sortedKeys(vf) {
			var val any
			if err := vf[k].Decode(&val); err != nil {
				ps.add(vf[k].Line, "variables", "%s: %v", k, err)
				continue
			}
			if _, err := json.Marshal(val); err != nil {
				ps.add(vf[k].Line, "variables", "%s: not a JSON-compatible value", k)
				continue
			}
			n.Variables[k], n.varLines[k] = val, vf[k].Line
		}
	}
	if len(ps) > 0 {
		// Structure problems first: checking ids and arcs on a half-read net
		// would only add noise.
		return nil, ps.err()
	}
	if err := n.check(); err != nil {
		return nil, err
	}
	return n, nil
}

// yamlError turns a YAML syntax error into a Error with its line.
func yamlError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var ps problems
	for _, part := range strings.Split(msg, "\n") {
		part = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(part), "unmarshal errors:"))
		if part == "" {
			continue
		}
		if m := yamlErrRe.FindStringSubmatch(part); m != nil {
			line, _ := strconv.Atoi(m[1])
			ps.add(line, "", "bad YAML: %s", m[2])
		} else {
			ps.add(0, "", "bad YAML: %s", part)
		}
	}
	return ps.err()
}

// check is the structure every net must have, from YAML or built in Go.
func (n *Net) check() error {
	var ps problems
	if !idPattern.MatchString(n.ID) {
		ps.add(n.idLine, "net", "id %q: want a letter or _ followed by letters, digits, _, . or - (at most 128)", n.ID)
	}
	if n.MaxSteps < 0 {
		ps.add(n.idLine, "net", "max_steps must not be negative")
	}
	kinds := map[string]string{} // id -> "place" or "transition"
	lines := map[string]int{}
	declare := func(kind, id string, line, i int) {
		el := element(kind, id, i)
		switch {
		case id == "":
			ps.add(line, el, "missing id")
		case !idPattern.MatchString(id):
			ps.add(line, el, "id %q: want a letter or _ followed by letters, digits, _, . or - (at most 128)", id)
		case kinds[id] != "":
			ps.add(line, el, "duplicate id %q (already the id of a %s at line %d)", id, kinds[id], lines[id])
		default:
			kinds[id], lines[id] = kind, line
		}
	}
	for i, p := range n.Places {
		declare("place", p.ID, p.Line, i)
		if p.Tokens < 0 || p.Tokens > maxTokens {
			ps.add(p.Line, element("place", p.ID, i), "tokens must be from 0 to %d", maxTokens)
		}
	}
	for i, t := range n.Transitions {
		declare("transition", t.ID, t.Line, i)
		for _, r := range t.Requires {
			if !reqPattern.MatchString(strings.TrimSpace(r)) {
				ps.add(lineOr(t.requiresLine, t.Line), element("transition", t.ID, i), "requires %q: not a package name", r)
			}
		}
	}
	for k := range n.Variables {
		if !pyname.IsIdentifier(k) {
			ps.add(n.varLines[k], "variables", "%q is not a Python identifier", k)
		}
	}
	type pair struct{ s, t string }
	seen := map[pair]int{} // the line of the first arc of each pair
	for i, a := range n.Arcs {
		el := arcElement(i, a)
		sk, tk := kinds[a.Source], kinds[a.Target]
		switch {
		case a.Source == "" || a.Target == "":
			ps.add(a.Line, el, "an arc needs a source and a target")
		case sk == "":
			ps.add(a.Line, el, "unknown source %q: %s", a.Source, known(n))
		case tk == "":
			ps.add(a.Line, el, "unknown target %q: %s", a.Target, known(n))
		case sk == tk:
			ps.add(a.Line, el, "joins two %ss: an arc goes from a place to a transition or back", sk)
		default:
			if first, dup := seen[pair{a.Source, a.Target}]; dup {
				ps.add(a.Line, el, "the same arc again (first at line %d): give one arc a weight instead", first)
			} else {
				seen[pair{a.Source, a.Target}] = a.Line
			}
		}
		if a.Weight < 0 || a.Weight > maxTokens {
			ps.add(a.Line, el, "weight must be from 1 to %d", maxTokens)
		}
	}
	return ps.err()
}

func lineOr(line, other int) int {
	if line > 0 {
		return line
	}
	return other
}

// known lists the ids an arc may name, for an error message.
func known(n *Net) string {
	var places, trans []string
	for _, p := range n.Places {
		if p.ID != "" && !contains(places, p.ID) {
			places = append(places, p.ID)
		}
	}
	for _, t := range n.Transitions {
		if t.ID != "" && !contains(trans, t.ID) {
			trans = append(trans, t.ID)
		}
	}
	list := func(ids []string) string {
		if len(ids) > 10 {
			ids = append(ids[:10:10], "...")
		}
		if len(ids) == 0 {
			return "none"
		}
		return strings.Join(ids, ", ")
	}
	return "no place or transition has this id (places: " + list(places) + "; transitions: " + list(trans) + ")"
}

func element(kind, id string, i int) string {
	if id == "" {
		return fmt.Sprintf("%s %d", kind, i+1)
	}
	return fmt.Sprintf("%s %q", kind, id)
}

func arcElement(i int, a Arc) string {
	return fmt.Sprintf("arc %d (%s -> %s)", i+1, a.Source, a.Target)
}

// resolve follows aliases.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// fields reads a mapping, reporting keys outside allowed ("*" allows any)
// and repeated keys. It returns nil if node is not a mapping.
func fields(ps *problems, node *yaml.Node, el string, allowed ...string) map[string]*yaml.Node {
	node = resolve(node)
	if node == nil || node.Kind != yaml.MappingNode {
		if node != nil && !(node.Kind == yaml.ScalarNode && node.Tag == "!!null") {
			ps.add(node.Line, el, "want a mapping (key: value lines), got %s", describe(node))
		} else if node != nil {
			ps.add(node.Line, el, "is empty: want a mapping")
		}
		return nil
	}
	out := map[string]*yaml.Node{}
	anyKey := len(allowed) == 1 && allowed[0] == "*"
	for i := 0; i+1 < len(node.Content); i += 2 {
		k, v := resolve(node.Content[i]), node.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			ps.add(k.Line, el, "a key must be a plain string")
			continue
		}
		if _, dup := out[k.Value]; dup {
			ps.add(k.Line, el, "the key %s appears twice", k.Value)
			continue
		}
		if !anyKey && !contains(allowed, k.Value) {
			ps.add(k.Line, el, "unknown key %q (want one of: %s)", k.Value, strings.Join(allowed, ", "))
			continue
		}
		out[k.Value] = v
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]*yaml.Node) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// seq reads a sequence; nil or null is empty.
func seq(ps *problems, node *yaml.Node, el, key string) []*yaml.Node {
	node = resolve(node)
	if node == nil || (node.Kind == yaml.ScalarNode && node.Tag == "!!null") {
		return nil
	}
	if node.Kind != yaml.SequenceNode {
		ps.add(node.Line, el, "%s: want a list (- items), got %s", key, describe(node))
		return nil
	}
	return node.Content
}

// str reads a scalar as a string; nil or null is "".
func str(ps *problems, node *yaml.Node, el, key string) string {
	node = resolve(node)
	if node == nil || (node.Kind == yaml.ScalarNode && node.Tag == "!!null") {
		return ""
	}
	if node.Kind != yaml.ScalarNode {
		ps.add(node.Line, el, "%s: want a string, got %s", key, describe(node))
		return ""
	}
	return node.Value
}

// code reads Python source and the YAML line of its first line. A YAML
// boolean becomes Python's True or False.
func code(ps *problems, node *yaml.Node, el, key string) (string, int) {
	node = resolve(node)
	if node.Kind == yaml.ScalarNode && node.Tag == "!!bool" {
		if b, err := strconv.ParseBool(strings.ToLower(node.Value)); err == nil {
			return map[bool]string{true: "True", false: "False"}[b], node.Line
		}
	}
	src := str(ps, node, el, key)
	line := node.Line
	if node.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		line++ // a block scalar's text starts on the line after its | or >
	}
	return src, line
}

// integer reads a whole number in [lo, hi].
func integer(ps *problems, node *yaml.Node, el, key string, lo, hi int) int {
	node = resolve(node)
	var v int
	if node.Kind != yaml.ScalarNode || node.Tag != "!!int" || node.Decode(&v) != nil || v < lo || v > hi {
		ps.add(node.Line, el, "%s: want a whole number from %d to %d, got %s", key, lo, hi, describe(node))
		return lo
	}
	return v
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return strconv.Quote(clip.Head(n.Value, 40))
	}
	return "something else"
}
