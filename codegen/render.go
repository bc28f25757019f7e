package codegen

import (
	"fmt"
	"strings"
)

// codeData is what the code templates see (see CodeTemplate()).
type codeData struct {
	Name        string
	Params      string // the def line's parameters
	Returns     string // the return annotation, "" for none
	Args        []argDoc
	ReturnsDoc  string
	Description string
	Before      string
	After       string
	Body        string
}

// argDoc is one parameter in the docstring's Args section.
type argDoc struct{ Name, Annotation, Doc string }

// parseCode parses the code templates with the override.
func parseCode(override string) (*prompts, error) {
	sample := codeData{Name: "f", Params: "x: int", Returns: "int", Args: []argDoc{{"x", "int", "a number"}},
		ReturnsDoc: "x", Description: "F.", Body: "    return x"}
	return parseTemplates("code", codeTemplate, override, codeNames, sample)
}

// renderFunction renders the final function in Options.Style from the
// signature (the user's: its parameters, annotations and docstring) and the
// model's code around and inside it. The user's docstring text wins; the
// model's fills in what it lacks.
func (g *Generator) renderFunction(sig *signatureInfo, parts *functionParts) (string, error) {
	if parts == nil {
		return "", fmt.Errorf("codegen: the validator did not split the function %s", sig.Name)
	}
	user, model := sig.Sections, parts.Sections
	d := codeData{
		Name:        sig.Name,
		Params:      sig.Typed,
		Returns:     sig.Returns,
		ReturnsDoc:  firstNonEmpty(user.Returns, model.Returns),
		Description: firstNonEmpty(user.Description, model.Description),
		Before:      parts.Before,
		After:       parts.After,
		Body:        parts.Body,
	}
	if g.opts.Style == "simple" {
		d.Params, d.Returns = sig.Plain, ""
	}
	for _, p := range sig.Params {
		a := argDoc{Name: p.Name, Annotation: p.Annotation, Doc: firstNonEmpty(user.Args[p.Name], model.Args[p.Name])}
		if g.opts.Style == "simple" {
			a.Annotation = ""
		}
		d.Args = append(d.Args, a)
	}
	code, err := g.code.render(g.opts.Style, d)
	if err != nil {
		return "", err
	}
	return strings.TrimRight(code, "\n") + "\n", nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}
