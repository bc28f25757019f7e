// Package clip shortens text for messages, on rune boundaries, marking the
// cut, so that a long script or reply never floods an error.
package clip

// Head keeps at most the first n bytes of s.
func Head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// Tail keeps at most the last n bytes of s.
func Tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && s[i]&0xC0 == 0x80 {
		i++
	}
	return "…" + s[i:]
}
