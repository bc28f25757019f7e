// Package pyname checks names that end up in Python source or imports:
// capability names, module names, a net's variables.
package pyname

import "slices"

// IsIdentifier reports whether s is an ASCII Python identifier of at most 128
// bytes and not a keyword, so that Python code can use it as a plain name.
func IsIdentifier(s string) bool {
	if s == "" || len(s) > 128 || slices.Contains(keywords, s) {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

var keywords = []string{"False", "None", "True", "and", "as", "assert", "async", "await", "break",
	"class", "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if",
	"import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
	"with", "yield"}
