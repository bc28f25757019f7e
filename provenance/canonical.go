package provenance

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
)

// maxCanonicalDepth bounds the nesting of a value Canonical accepts.
const maxCanonicalDepth = 512

// Canonical returns the canonical JSON encoding of a JSON text, the form
// provenance hashes are computed over, so that equal values hash equally
// whatever their key order, whitespace or number spelling.
//
// The encoding follows RFC 8785 (JSON Canonicalization Scheme):
//   - no whitespace between tokens;
//   - object members sorted by their keys' UTF-16 code units; a duplicate
//     key is an error;
//   - strings as in ECMAScript's JSON.stringify: only '"', '\\' and the
//     control characters are escaped (\b \t \n \f \r, else \u00xx), every
//     other character is written as UTF-8;
//   - numbers in ECMAScript's Number::toString layout: "1e2", "100" and
//     "100.0" are all 100; "-0" is 0; fixed notation from 1e-6 to below 1e21,
//     exponential ("1e+21", "1.5e-7") outside it.
//
// One departure from RFC 8785: a number keeps every significant digit of its
// literal instead of being rounded to an IEEE 754 double, so two integers
// beyond 2^53 that differ never hash equally. For any number an ordinary
// JSON encoder writes (Go's, Python's: the shortest digits that round-trip
// a double) the two encodings agree.
func Canonical(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var buf bytes.Buffer
	if err := canonicalValue(dec, &buf, 0); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("provenance: canonical JSON: data after the value")
	}
	return buf.Bytes(), nil
}

// Hash is the lowercase hex SHA-256 of data's canonical JSON encoding.
func Hash(data []byte) (string, error) {
	c, err := Canonical(data)
	if err != nil {
		return "", err
	}
	return HashBytes(c), nil
}

// HashBytes is the lowercase hex SHA-256 of b, as is.
func HashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func canonicalValue(dec *json.Decoder, buf *bytes.Buffer, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("provenance: canonical JSON: %w", err)
	}
	return canonicalToken(dec, buf, tok, depth)
}

func canonicalToken(dec *json.Decoder, buf *bytes.Buffer, tok json.Token, depth int) error {
	if depth > maxCanonicalDepth {
		return fmt.Errorf("provenance: canonical JSON: nested deeper than %d", maxCanonicalDepth)
	}
	switch t := tok.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		buf.WriteString(strconv.FormatBool(t))
	case string:
		writeCanonicalString(buf, t)
	case json.Number:
		s, err := canonicalNumber(string(t))
		if err != nil {
			return err
		}
		buf.WriteString(s)
	case json.Delim:
		switch t {
		case '[':
			buf.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					buf.WriteByte(',')
				}
				if err := canonicalValue(dec, buf, depth+1); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil { // ']'
				return fmt.Errorf("provenance: canonical JSON: %w", err)
			}
			buf.WriteByte(']')
		case '{':
			type member struct {
				key   string
				value []byte
			}
			var members []member
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return fmt.Errorf("provenance: canonical JSON: %w", err)
				}
				key := kt.(string)
				if seen[key] {
					return fmt.Errorf("provenance: canonical JSON: duplicate key %q", key)
				}
				seen[key] = true
				var vb bytes.Buffer
				if err := canonicalValue(dec, &vb, depth+1); err != nil {
					return err
				}
				members = append(members, member{key, vb.Bytes()})
			}
			if _, err := dec.Token(); err != nil { // '}'
				return fmt.Errorf("provenance: canonical JSON: %w", err)
			}
			slices.SortFunc(members, func(a, b member) int { return compareUTF16(a.key, b.key) })
			buf.WriteByte('{')
			for i, m := range members {
				if i > 0 {
					buf.WriteByte(',')
				}
				writeCanonicalString(buf, m.key)
				buf.WriteByte(':')
				buf.Write(m.value)
			}
			buf.WriteByte('}')
		default:
			return fmt.Errorf("provenance: canonical JSON: unexpected %v", t)
		}
	}
	return nil
}

// compareUTF16 orders strings by their UTF-16 code units, as RFC 8785 asks.
func compareUTF16(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func writeCanonicalString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			buf.WriteString(`\"`)
		case '\\':
			buf.WriteString(`\\`)
		case '\b':
			buf.WriteString(`\b`)
		case '\t':
			buf.WriteString(`\t`)
		case '\n':
			buf.WriteString(`\n`)
		case '\f':
			buf.WriteString(`\f`)
		case '\r':
			buf.WriteString(`\r`)
		default:
			if r < 0x20 {
				fmt.Fprintf(buf, `\u%04x`, r)
			} else {
				buf.WriteRune(r)
			}
		}
	}
	buf.WriteByte('"')
}

// maxExponent bounds a number's decimal exponent, as written and once
// normalised: beyond it a value is no number any JSON reader can hold.
const maxExponent = 1e9

// canonicalNumber rewrites a JSON number literal in ECMAScript's
// Number::toString layout, keeping its exact decimal value.
func canonicalNumber(lit string) (string, error) {
	bad := func() (string, error) { return "", fmt.Errorf("provenance: canonical JSON: bad number %q", lit) }
	neg := strings.HasPrefix(lit, "-")
	s := strings.TrimPrefix(lit, "-")
	mant, expPart, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	exp := 0
	if hasExp {
		e, err := strconv.Atoi(expPart)
		if err != nil || e > maxExponent || e < -maxExponent {
			return bad()
		}
		exp = e
	}
	// value = digits × 10^exp, digits without leading or trailing zeros.
	digits := strings.TrimLeft(intPart+frac, "0")
	exp -= len(frac)
	if digits == "" {
		return "0", nil // also -0
	}
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	digits = trimmed
	for _, c := range digits {
		if c < '0' || c > '9' {
			return bad()
		}
	}
	k := len(digits)
	n := k + exp // the decimal point sits after n digits
	if n-1 > maxExponent || n-1 < -maxExponent {
		return bad() // bounded as written out, so that the canonical form parses again
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	switch {
	case k <= n && n <= 21: // an integer: digits and n-k zeros
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", n-k))
	case 0 < n && n <= 21: // a fraction with an integer part
		b.WriteString(digits[:n])
		b.WriteByte('.')
		b.WriteString(digits[n:])
	case -6 < n && n <= 0: // 0.000ddd
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -n))
		b.WriteString(digits)
	default: // d.ddde±x
		b.WriteString(digits[:1])
		if k > 1 {
			b.WriteByte('.')
			b.WriteString(digits[1:])
		}
		b.WriteByte('e')
		if n-1 >= 0 {
			b.WriteByte('+')
		}
		b.WriteString(strconv.Itoa(n - 1))
	}
	return b.String(), nil
}
