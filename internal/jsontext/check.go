// Package jsontext checks what a JSON text from outside the process must
// hold before anything decodes it: encoding/json quietly turns invalid UTF-8
// and unpaired UTF-16 surrogate escapes ("\ud800") into U+FFFD, and its
// nesting limit (10000) is far beyond what any of wasmpy's inputs needs.
//
//	if err := jsontext.Check(body, jsontext.Limits{Depth: 512}); err != nil { /* refuse the request */ }
package jsontext

import (
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrInvalidUTF8 is the error for a text that is not UTF-8.
var ErrInvalidUTF8 = errors.New("not valid UTF-8")

// Limits bound the shape of a JSON text; a zero field means no bound.
type Limits struct {
	Depth      int // how deep arrays and objects nest
	Containers int // how many arrays and objects there are in all
}

// Check reports the first way data breaks these rules: it is UTF-8, its
// strings hold no unpaired surrogate escape, and its arrays and objects keep
// within lim. It does not check that data is JSON otherwise; the decoder
// that follows does.
func Check(data []byte, lim Limits) error {
	if !utf8.Valid(data) {
		return ErrInvalidUTF8
	}
	depth, containers := 0, 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			end, err := checkString(data, i+1)
			if err != nil {
				return err
			}
			i = end
		case '[', '{':
			if depth++; lim.Depth > 0 && depth > lim.Depth {
				return fmt.Errorf("nested deeper than %d levels (at byte %d)", lim.Depth, i)
			}
			if containers++; lim.Containers > 0 && containers > lim.Containers {
				return fmt.Errorf("more than %d arrays and objects (at byte %d)", lim.Containers, i)
			}
		case ']', '}':
			depth--
		}
	}
	return nil
}

// checkString scans the string whose body starts at data[i] and returns the
// index of its closing quote (or len(data) if it has none).
func checkString(data []byte, i int) (int, error) {
	for ; i < len(data); i++ {
		switch data[i] {
		case '"':
			return i, nil
		case '\\':
			if i+1 < len(data) && data[i+1] == 'u' {
				r, ok := hex4(data, i+2)
				if !ok {
					i++ // a malformed escape: the decoder reports it
					continue
				}
				switch {
				case utf16.IsSurrogate(r) && r < 0xdc00: // high: a low must follow
					low, ok := rune(0), false
					if i+7 < len(data) && data[i+6] == '\\' && data[i+7] == 'u' {
						low, ok = hex4(data, i+8)
					}
					if !ok || utf16.DecodeRune(r, low) == utf8.RuneError {
						return 0, fmt.Errorf(`a string holds an unpaired UTF-16 surrogate \u%04x (at byte %d)`, r, i)
					}
					i += 11
				case utf16.IsSurrogate(r):
					return 0, fmt.Errorf(`a string holds an unpaired UTF-16 surrogate \u%04x (at byte %d)`, r, i)
				default:
					i += 5
				}
				continue
			}
			i++ // skip the escaped byte
		}
	}
	return len(data), nil
}

// hex4 reads the four hex digits at data[i:].
func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
