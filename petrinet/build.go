package petrinet

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing/fstest"
	"text/template"

	"github.com/wasmpy/wasmpy/internal/clip"
)

//go:embed templates/main.py.tmpl
var netMainTemplate string

var netMain = template.Must(template.New("main.py").Parse(netMainTemplate))

// Entrypoint is the file of an Artifact that runs the net.
const Entrypoint = "main.py"

// File is one file of an Artifact.
type File struct {
	Path string // slash-separated, relative to the artifact's directory
	Data []byte
}

// Artifact is a net turned into Python: one module per transition
// (transitions/ID.py, the inscription as top-level code), the entrypoint
// main.py that fires them, and requirements.txt when transitions declare
// requirements. Run it as it is: `python3 DIR/main.py`, or in the sandbox
// `wasmpy exec DIR/main.py` (or a Job with FS as its App).
type Artifact struct {
	Net          string   // the net's id
	Entrypoint   string   // Entrypoint
	Files        []File   // sorted by path
	Requirements []string // what the transitions declare, sorted, deduplicated
}

// FS is the artifact's files, as WriteDir would write them.
func (a *Artifact) FS() fs.FS {
	m := fstest.MapFS{}
	for _, f := range a.Files {
		m[f.Path] = &fstest.MapFile{Data: f.Data, Mode: 0o444}
	}
	return m
}

// file is the data of the artifact's file at path.
func (a *Artifact) file(path string) []byte {
	for _, f := range a.Files {
		if f.Path == path {
			return f.Data
		}
	}
	return nil
}

// WriteDir writes the files under dir, creating it.
func (a *Artifact) WriteDir(dir string) error {
	for _, f := range a.Files {
		path := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("petrinet: %w", err)
		}
		if err := os.WriteFile(path, f.Data, 0o644); err != nil {
			return fmt.Errorf("petrinet: %w", err)
		}
	}
	return nil
}

// netJSON is the structure main.py reads.
type netJSON struct {
	ID          string           `json:"id"`
	Name        string           `json:"name"`
	Marking     marking          `json:"marking"`
	Transitions []transitionJSON `json:"transitions"`
	Variables   map[string]any   `json:"variables"`
	MaxSteps    int              `json:"max_steps"`
}

type transitionJSON struct {
	ID       string         `json:"id"`
	Name     string         `json:"name"`
	Module   string         `json:"module"`
	Guard    string         `json:"guard"`
	Inputs   map[string]int `json:"inputs"`
	Outputs  map[string]int `json:"outputs"`
	Requires []string       `json:"requires"`
}

// Build turns the net into an Artifact. It checks the net's structure (a
// Net from Parse passes) but not its Python: call Check for that.
func (n *Net) Build() (*Artifact, error) {
	if err := n.check(); err != nil {
		return nil, err
	}
	nj := netJSON{ID: n.ID, Name: n.Name, Transitions: []transitionJSON{},
		Variables: n.Variables, MaxSteps: n.MaxSteps}
	if nj.Variables == nil {
		nj.Variables = map[string]any{}
	}
	if nj.MaxSteps == 0 {
		nj.MaxSteps = DefaultMaxSteps
	}
	for _, p := range n.Places {
		nj.Marking = append(nj.Marking, p)
	}
	index := map[string]int{}
	for i, t := range n.Transitions {
		index[t.ID] = i
		req := append([]string{}, t.Requires...)
		nj.Transitions = append(nj.Transitions, transitionJSON{ID: t.ID, Name: t.Name, Module: moduleOf(t.ID),
			Guard: strings.TrimSpace(t.Guard), Inputs: map[string]int{}, Outputs: map[string]int{}, Requires: req})
	}
	for _, a := range n.Arcs {
		w := a.Weight
		if w == 0 {
			w = 1
		}
		if i, ok := index[a.Target]; ok {
			nj.Transitions[i].Inputs[a.Source] = w
		} else {
			nj.Transitions[index[a.Source]].Outputs[a.Target] = w
		}
	}

	art := &Artifact{Net: n.ID, Entrypoint: Entrypoint}
	seen := map[string]bool{}
	for i, t := range n.Transitions {
		src := transitionModule(n, t, nj.Transitions[i])
		art.Files = append(art.Files, File{Path: moduleOf(t.ID), Data: []byte(src)})
		for _, r := range t.Requires {
			if r = strings.TrimSpace(r); !seen[r] {
				seen[r] = true
				art.Requirements = append(art.Requirements, r)
			}
		}
	}
	sort.Strings(art.Requirements)
	if len(art.Requirements) > 0 {
		art.Files = append(art.Files, File{Path: "requirements.txt", Data: []byte(strings.Join(art.Requirements, "\n") + "\n")})
	}
	main, err := renderMain(nj)
	if err != nil {
		return nil, err
	}
	art.Files = append(art.Files, File{Path: Entrypoint, Data: []byte(main)})
	sort.Slice(art.Files, func(i, j int) bool { return art.Files[i].Path < art.Files[j].Path })
	return art, nil
}

// marking is the initial marking as a JSON object in the places' order, so
// that the marking main.py reports lists them as the net does.
type marking []Place

func (m marking) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, p := range m {
		if i > 0 {
			b = append(b, ", "...)
		}
		k, _ := json.Marshal(p.ID)
		b = append(b, k...)
		b = append(b, ": "...)
		b = strconv.AppendInt(b, int64(p.Tokens), 10)
	}
	return append(b, '}'), nil
}

func moduleOf(id string) string { return "transitions/" + id + ".py" }

// renderMain writes main.py.
func renderMain(nj netJSON) (string, error) {
	netText, err := indentJSON(nj)
	if err != nil {
		return "", fmt.Errorf("petrinet: net %s: %w", nj.ID, err)
	}
	data := struct{ Title, NetJSON string }{Title: oneLineComment(nj.ID), NetJSON: netText}
	// JSON text is safe inside r"""...""": every " in a JSON string is
	// escaped, so three never meet, and it never ends with a backslash.
	var b strings.Builder
	if err := netMain.Execute(&b, data); err != nil {
		return "", fmt.Errorf("petrinet: net %s: %w", nj.ID, err)
	}
	return b.String(), nil
}

// indentJSON is readable JSON: indented, and with <, > and & as they are.
func indentJSON(v any) (string, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

// transitionModule is a transition's module: a header of comments, then the
// inscription as top-level code.
func transitionModule(n *Net, t Transition, tj transitionJSON) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Transition %s of net %s, generated by wasmpy (do not edit).\n", oneLineComment(t.ID), oneLineComment(n.ID))
	if t.Name != "" {
		fmt.Fprintf(&b, "# Name: %s\n", oneLineComment(t.Name))
	}
	fmt.Fprintf(&b, "# Consumes: %s. Produces: %s.\n", weights(tj.Inputs), weights(tj.Outputs))
	if tj.Guard != "" {
		fmt.Fprintf(&b, "# Guard: %s\n", oneLineComment(tj.Guard))
	}
	if len(t.Requires) > 0 {
		fmt.Fprintf(&b, "# Requires: %s\n", oneLineComment(strings.Join(t.Requires, ", ")))
	}
	b.WriteString("# main.py runs this with the net's variables as globals and `marking` in scope.\n")
	ins := strings.TrimRight(t.Inscription, " \t\n")
	if strings.TrimSpace(ins) == "" {
		ins = "pass"
	}
	b.WriteString(ins + "\n")
	return b.String()
}

func weights(m map[string]int) string {
	if len(m) == 0 {
		return "nothing"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s×%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// oneLineComment makes s safe inside a one-line comment or docstring.
func oneLineComment(s string) string {
	s = strings.NewReplacer("\n", " ", "\r", " ", `"""`, `'''`, `\`, `/`).Replace(s)
	return clip.Head(s, 200)
}
