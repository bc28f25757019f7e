package skills

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// yamlTypeProblems rewrites yaml.v3's type errors into what a skill author
// can act on, naming the field and what it wants instead of Go's types
// ("field timeout not found in type skills.manifest", "cannot unmarshal
// !!str `none` into []string"). It returns the problems and the fields
// they concern, so the manifest's own checks do not report those again.
func yamlTypeProblems(raw []byte, errs []string) (problems []string, fields []string) {
	keys := keyLines(raw)
	for _, e := range errs {
		line, msg := 0, e
		if m := lineRE.FindStringSubmatch(e); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		key := keys[line]
		where := fmt.Sprintf("line %d: ", line)
		switch m := unknownRE.FindStringSubmatch(msg); {
		case m != nil:
			parent, _, nested := strings.Cut(key, ".")
			allowed := manifestFields
			if nested {
				allowed = limitsFields
				m[1] = parent + "." + m[1]
			}
			problems = append(problems, fmt.Sprintf("%s%s: unknown field (the fields are %s)", where, m[1], strings.Join(allowed, ", ")))
			continue
		}
		if m := typeRE.FindStringSubmatch(msg); m != nil {
			want := map[string]string{"[]string": "a list of strings", "string": "a string", "bool": "true or false",
				"uint64": "a whole number, 0 or more"}[m[3]]
			if want == "" {
				want = "a mapping"
			}
			got := map[string]string{"str": "a string", "int": "a number", "float": "a number", "bool": "a boolean",
				"seq": "a list", "map": "a mapping", "null": "nothing"}[m[1]]
			if got == "" {
				got = "!!" + m[1]
			}
			if m[2] != "" {
				got += " (" + m[2] + ")"
			}
			if key == "" {
				key = "the manifest"
			}
			problems = append(problems, fmt.Sprintf("%s%s: want %s, got %s", where, key, want, got))
			fields = append(fields, key)
			continue
		}
		problems = append(problems, e)
	}
	return problems, fields
}

var (
	lineRE    = regexp.MustCompile(`^line (\d+): (.*)$`)
	unknownRE = regexp.MustCompile(`^field (\S+) not found in type `)
	typeRE    = regexp.MustCompile("^cannot unmarshal !!(\\w+) (?:`(.*)` )?into (.+)$")
)

// The fields skill.yaml may have, for the message on an unknown one.
var (
	manifestFields = []string{"name", "version", "description", "handler", "safety_flags", "requires_approval", "tags", "requires", "limits"}
	limitsFields   = []string{"timeout", "memory", "fuel"}
)

// keyLines maps each line of a value in the manifest to the key it is the
// value of ("safety_flags", "limits.timeout").
func keyLines(raw []byte) map[int]string {
	keys := map[int]string{}
	var doc yaml.Node
	if yaml.Unmarshal(raw, &doc) != nil {
		return keys
	}
	var walk func(n *yaml.Node, key string)
	walk = func(n *yaml.Node, key string) {
		switch n.Kind {
		case yaml.DocumentNode, yaml.SequenceNode:
			for _, c := range n.Content {
				walk(c, key)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				if key != "" {
					k = key + "." + k
				}
				keys[n.Content[i].Line] = k
				walk(n.Content[i+1], k)
			}
		default:
			if key != "" {
				keys[n.Line] = key
			}
		}
	}
	walk(&doc, "")
	return keys
}

// concerns reports whether a manifest check's reason is about one of
// fields ("safety_flags: missing" is about safety_flags).
func concerns(reason string, fields []string) bool {
	return slices.ContainsFunc(fields, func(f string) bool {
		return strings.HasPrefix(reason, f+":") || strings.HasPrefix(reason, f+" ")
	})
}
