package skills

import (
	"cmp"
	"strings"
)

// compareVersions orders two semantic versions by precedence (semver.org
// 2.0.0, section 11): numerically by major, minor and patch; a pre-release
// before its release; pre-release identifiers one by one, numbers
// numerically and before words. Versions of equal precedence (differing
// only in build metadata) are ordered by their text, so the order is total.
func compareVersions(a, b string) int {
	ca, pa := splitVersion(a)
	cb, pb := splitVersion(b)
	for i := range 3 {
		if c := compareNumbers(ca[i], cb[i]); c != 0 {
			return c
		}
	}
	switch {
	case pa == "" && pb != "":
		return 1
	case pa != "" && pb == "":
		return -1
	}
	ia, ib := strings.Split(pa, "."), strings.Split(pb, ".")
	for i := 0; i < len(ia) && i < len(ib) && pa != ""; i++ {
		aNum, bNum := numeric(ia[i]), numeric(ib[i])
		var c int
		switch {
		case aNum && bNum:
			c = compareNumbers(ia[i], ib[i])
		case aNum:
			c = -1
		case bNum:
			c = 1
		default:
			c = strings.Compare(ia[i], ib[i])
		}
		if c != 0 {
			return c
		}
	}
	if c := cmp.Compare(len(ia), len(ib)); c != 0 && pa != "" {
		return c
	}
	return strings.Compare(a, b)
}

// splitVersion returns a version's major, minor and patch (as digits) and
// its pre-release, without build metadata.
func splitVersion(v string) ([3]string, string) {
	v, _, _ = strings.Cut(v, "+")
	core, pre, _ := strings.Cut(v, "-")
	var parts [3]string
	copy(parts[:], strings.SplitN(core, ".", 3))
	return parts, pre
}

// numeric reports whether a pre-release identifier is a number.
func numeric(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

// compareNumbers compares two strings of digits without leading zeros (as
// semver has them) by value, at any length.
func compareNumbers(a, b string) int {
	if c := cmp.Compare(len(a), len(b)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}
