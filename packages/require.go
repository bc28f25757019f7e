package packages

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// requirement is a pip-style requirement: "name", "name>=1.2,<2",
// "name[extra]==1.4.*". Environment markers (";") are refused: the
// sandbox is one environment, known in advance.
var requirement = regexp.MustCompile(`^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*?)\s*$`)
var separators = regexp.MustCompile(`[-_.]+`)
var clause = regexp.MustCompile(`^(~=|===|==|!=|<=|>=|<|>)\s*([0-9][0-9A-Za-z.+!*-]*)$`)

// Satisfy finds the distribution among dists that meets req, the package
// set being the allowlist: a requirement no set provides is refused, with
// the reason in the error. A standard library module named without a
// version ("json") is met by the interpreter: Satisfy returns nil, nil.
func Satisfy(req string, dists []Distribution) (*Distribution, error) {
	m := requirement.FindStringSubmatch(req)
	if m == nil || strings.Contains(req, ";") {
		return nil, fmt.Errorf("%q is not a requirement wasmpy reads (name, optional [extras], version clauses such as >=1.2,<2)", req)
	}
	name, spec := normalize(m[1]), strings.TrimSpace(m[3])
	if spec == "" && m[2] == "" && Reserved(m[1]) {
		return nil, nil
	}
	var found *Distribution
	for i := range dists {
		if normalize(dists[i].Name) == name {
			found = &dists[i]
		}
	}
	if found == nil {
		return nil, fmt.Errorf("no package set provides %s", m[1])
	}
	if spec == "" {
		return found, nil
	}
	for _, c := range strings.Split(spec, ",") {
		cm := clause.FindStringSubmatch(strings.TrimSpace(c))
		if cm == nil {
			return nil, fmt.Errorf("%q: cannot read the version clause %q", req, strings.TrimSpace(c))
		}
		if !meets(found.Version, cm[1], cm[2]) {
			return nil, fmt.Errorf("the package sets have %s %s, which is not %s", found.Name, found.Version, spec)
		}
	}
	return found, nil
}

// normalize is PEP 503's name normalization.
func normalize(name string) string {
	return strings.ToLower(separators.ReplaceAllString(name, "-"))
}

// meets compares release numbers (1.13.3 in 1.13.3rc1+local): enough for
// the clauses skills and nets write, not all of PEP 440.
func meets(have, op, want string) bool {
	if op == "===" {
		return have == want
	}
	if strings.HasSuffix(want, ".*") && (op == "==" || op == "!=") {
		prefix := release(strings.TrimSuffix(want, ".*"))
		h := release(have)
		match := len(h) >= len(prefix) && compare(h[:len(prefix)], prefix) == 0
		return match == (op == "==")
	}
	c := compare(release(have), release(want))
	switch op {
	case "==":
		return c == 0
	case "!=":
		return c != 0
	case "<=":
		return c <= 0
	case ">=":
		return c >= 0
	case "<":
		return c < 0
	case ">":
		return c > 0
	case "~=": // >= want, == want's release without its last number
		w := release(want)
		h := release(have)
		if len(w) < 2 || c < 0 || len(h) < len(w)-1 {
			return false
		}
		return compare(h[:len(w)-1], w[:len(w)-1]) == 0
	}
	return false
}

// release is a version's leading dotted numbers, without an epoch.
func release(v string) []int {
	if _, after, ok := strings.Cut(v, "!"); ok {
		v = after
	}
	var nums []int
	for _, part := range strings.Split(v, ".") {
		digits := part
		if i := strings.IndexFunc(part, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
			digits = part[:i]
		}
		n, err := strconv.Atoi(digits)
		if err != nil {
			break
		}
		nums = append(nums, n)
		if len(digits) < len(part) {
			break
		}
	}
	return nums
}

// compare orders releases, padding the shorter with zeros (1.2 == 1.2.0).
func compare(a, b []int) int {
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y int
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}
