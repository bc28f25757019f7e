package codegen

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"text/template"
)

var (
	//go:embed templates/task.tmpl
	taskTemplate string
	//go:embed templates/function.tmpl
	functionTemplate string
	//go:embed templates/code.tmpl
	codeTemplate string
)

// TaskTemplate returns the embedded prompt template of Generator.Task, a
// starting point for Options.TaskTemplate.
func TaskTemplate() string { return taskTemplate }

// FunctionTemplate returns the embedded prompt template of
// Generator.Function, a starting point for Options.FunctionTemplate.
func FunctionTemplate() string { return functionTemplate }

// CodeTemplate returns the embedded template of the code Generator.Function
// hands back ("typed", "simple") and of the test scaffold ("tests"), a
// starting point for Options.CodeTemplate.
func CodeTemplate() string { return codeTemplate }

// promptNames are the templates a prompt set defines; codeNames the code
// template's.
var (
	promptNames = []string{"system", "user", "retry"}
	codeNames   = []string{"typed", "simple", "tests"}
)

var templateFuncs = template.FuncMap{"join": strings.Join, "pydoc": pydoc, "indent": indent}

// pydoc escapes text for the inside of a """ docstring.
func pydoc(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"""`, `\"\"\"`)
}

// indent indents every line of s but the first by n spaces (blank lines stay
// empty), for text that continues an indented line.
func indent(n int, s string) string {
	pad := strings.Repeat(" ", n)
	lines := strings.Split(s, "\n")
	for i := 1; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "" {
			lines[i] = pad + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

// promptData is what the templates see.
type promptData struct {
	Task           string
	Signature      string
	Function       string
	AllowImports   []string
	ForbiddenNames []string
	ResultRequired bool
	// Grants are the capabilities a run of the code is granted (builtin
	// names such as read_file); see Granted.
	Grants []string
	// For "retry":
	Attempt int
	Code    string
	Problem string
	// Function's: whether tests are asked for, the test scaffold, and how
	// many doctest examples the signature holds.
	Tests        bool
	TestScaffold string
	Doctests     int
}

// Granted reports whether the run is granted the capability name, for the
// templates: {{if .Granted "read_file"}}.
func (d promptData) Granted(name string) bool { return slices.Contains(d.Grants, name) }

// GrantedAny reports whether the run is granted any of names.
func (d promptData) GrantedAny(names ...string) bool { return slices.ContainsFunc(names, d.Granted) }

// prompts is one mode's parsed templates.
type prompts struct {
	kind string
	t    *template.Template
	text string // the embedded text and the override, for the cache key
}

// parsePrompts parses a prompt set: parseTemplates with the prompts' names
// and sample data.
func parsePrompts(kind, embedded, override string) (*prompts, error) {
	sample := promptData{Task: "t", Signature: "def f(x):", Function: "f", AllowImports: []string{"math"},
		ForbiddenNames: []string{"eval"}, ResultRequired: true, Grants: []string{"submit_result"}, Attempt: 1, Code: "pass\n", Problem: "p",
		Tests: true, TestScaffold: "import unittest\n", Doctests: 1}
	return parseTemplates(kind, embedded, override, promptNames, sample)
}

// parseTemplates parses the embedded templates, then the override, whose
// {{define}}s replace the embedded ones of the same name, and renders each
// of names once with sample, so that a template that cannot run fails now.
func parseTemplates(kind, embedded, override string, names []string, sample any) (*prompts, error) {
	t, err := template.New(kind).Funcs(templateFuncs).Option("missingkey=error").Parse(embedded)
	if err != nil {
		return nil, fmt.Errorf("codegen: %s template: %w", kind, err)
	}
	if override != "" {
		probe, err := template.New("override").Funcs(templateFuncs).Parse(override)
		if err != nil {
			return nil, fmt.Errorf("codegen: %s template override: %w", kind, err)
		}
		defined := false
		for _, name := range names {
			defined = defined || probe.Lookup(name) != nil
		}
		if !defined {
			return nil, fmt.Errorf(`codegen: %s template override defines none of "%s": wrap the text in {{define "%s"}}...{{end}}`,
				kind, strings.Join(names, `", "`), names[0])
		}
		if _, err := t.New("override").Parse(override); err != nil {
			return nil, fmt.Errorf("codegen: %s template override: %w", kind, err)
		}
	}
	p := &prompts{kind: kind, t: t, text: embedded + "\x00" + override}
	for _, name := range names {
		if _, err := p.render(name, sample); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (p *prompts) render(name string, data any) (string, error) {
	var b strings.Builder
	if err := p.t.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("codegen: %s template: %w", p.kind, err)
	}
	return strings.TrimSpace(b.String()), nil
}
