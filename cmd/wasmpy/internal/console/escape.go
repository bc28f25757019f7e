package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// What the CLI prints from a request or a guest (actor ids, skill names,
// outcomes, error messages, a handler's stderr) may hold escape sequences
// that retitle or clear the operator's terminal, or newlines and tabs that
// forge table rows. Clean, CleanText and WriteIndented make every such
// character visible instead.

// Clean escapes every character that is not printable or a space: control
// characters (\n, \t, \x1b...), format characters (\u202e), invalid UTF-8
// (\xff). The result is one line that a table cell can hold.
func Clean(s string) string { return escape(s, false) }

// CleanText is Clean for multi-line text: newlines and tabs stay.
func CleanText(s string) string { return escape(s, true) }

func escape(s string, keepLines bool) string {
	if plain(s, keepLines) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case shown(r, keepLines):
			b.WriteString(s[i : i+n])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
		i += n
	}
	return b.String()
}

// shown reports whether r is printed as itself.
func shown(r rune, keepLines bool) bool {
	return unicode.IsGraphic(r) || keepLines && (r == '\n' || r == '\t')
}

// plain reports whether every character of s is printed as itself.
func plain(s string, keepLines bool) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || !shown(r, keepLines) {
			return false
		}
		i += n
	}
	return true
}

// WriteIndented prints v as indented JSON that a terminal shows as is:
// encoding/json escapes the C0 controls but leaves the C1 ones (U+0080 to
// U+009F, which some terminals obey) and format characters such as
// bidirectional overrides raw, so those become \u escapes too, which a JSON
// reader decodes the same.
func WriteIndented(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	out := buf.String()
	if plain(out, true) {
		_, err := io.WriteString(w, out)
		return err
	}
	var b strings.Builder
	for _, r := range out { // encoding/json writes valid UTF-8
		switch r1, r2 := utf16.EncodeRune(r); {
		case shown(r, true):
			b.WriteRune(r)
		case r1 != utf8.RuneError:
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// OneLine is err as one line of a message: "wasmpy: " first, once, and its
// newlines joined.
func OneLine(err error) string {
	s := err.Error()
	if !strings.HasPrefix(s, "wasmpy:") {
		s = "wasmpy: " + s
	}
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", " ")
}
