package codegen

import (
	_ "embed"
	"fmt"
	"strings"
	"text/template"
)

var (
	//go:embed templates/task.tmpl
	taskTemplate string
	//go:embed templates/function.tmpl
	functionTemplate string
)

// TaskTemplate returns the embedded prompt template of Generator.Task, a
// starting point for Options.TaskTemplate.
func TaskTemplate() string { return taskTemplate }

// FunctionTemplate returns the embedded prompt template of
// Generator.Function, a starting point for Options.FunctionTemplate.
func FunctionTemplate() string { return functionTemplate }

// templateNames are the templates a prompt set defines.
var templateNames = []string{"system", "user", "retry"}

var templateFuncs = template.FuncMap{"join": strings.Join}

// promptData is what the templates see.
type promptData struct {
	Task           string
	Signature      string
	Function       string
	AllowImports   []string
	ForbiddenNames []string
	ResultRequired bool
	// For "retry":
	Attempt int
	Code    string
	Problem string
}

// prompts is one mode's parsed templates.
type prompts struct {
	kind string
	t    *template.Template
	text string // the embedded text and the override, for the cache key
}

// parsePrompts parses the embedded templates, then the override, whose
// {{define}}s replace the embedded ones of the same name.
func parsePrompts(kind, embedded, override string) (*prompts, error) {
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
		for _, name := range templateNames {
			defined = defined || probe.Lookup(name) != nil
		}
		if !defined {
			return nil, fmt.Errorf(`codegen: %s template override defines none of "system", "user", "retry": wrap the text in {{define "system"}}...{{end}}`, kind)
		}
		if _, err := t.New("override").Parse(override); err != nil {
			return nil, fmt.Errorf("codegen: %s template override: %w", kind, err)
		}
	}
	p := &prompts{kind: kind, t: t, text: embedded + "\x00" + override}
	// Render once with sample data, so a template that cannot run fails now.
	sample := promptData{Task: "t", Signature: "def f(x):", Function: "f", AllowImports: []string{"math"},
		ForbiddenNames: []string{"eval"}, ResultRequired: true, Attempt: 1, Code: "pass\n", Problem: "p"}
	for _, name := range templateNames {
		if _, err := p.render(name, sample); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (p *prompts) render(name string, data promptData) (string, error) {
	var b strings.Builder
	if err := p.t.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("codegen: %s template: %w", p.kind, err)
	}
	return strings.TrimSpace(b.String()), nil
}
