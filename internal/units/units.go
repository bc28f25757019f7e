// Package units reads sizes, in flags and in configuration files alike.
package units

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

var suffixes = []struct {
	suffix string
	mult   uint64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"kB", 1000}, {"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1},
}

// ParseSize reads "64MiB", "1GiB", "512K", "100B" (binary units), the
// decimal "kB", "MB", "GB", and a bare number of bytes ("1048576").
func ParseSize(s string) (uint64, error) {
	n, _, err := parse(s)
	return n, err
}

// ParseSizeWithUnit is ParseSize for a command-line flag, where a bare
// number is ambiguous ("64": bytes or MiB?): it needs a unit, except 0.
func ParseSizeWithUnit(s string) (uint64, error) {
	n, unit, err := parse(s)
	if err == nil && !unit && n != 0 {
		return 0, errors.New("size without a unit")
	}
	return n, err
}

func parse(s string) (n uint64, unit bool, err error) {
	s = strings.TrimSpace(s)
	mult := uint64(1)
	for _, u := range suffixes {
		if strings.HasSuffix(s, u.suffix) {
			s, mult, unit = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult, true
			break
		}
	}
	n, err = strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, unit, errors.New("bad size")
	}
	if n > (1<<62)/mult {
		return 0, unit, errors.New("size too large")
	}
	return n * mult, unit, nil
}

// FormatSize writes n bytes in the largest binary unit that divides it
// (64MiB, 1GiB, 1500B), as ParseSize reads it back.
func FormatSize(n uint64) string {
	for _, u := range []struct {
		name  string
		bytes uint64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.bytes && n%u.bytes == 0 {
			return fmt.Sprintf("%d%s", n/u.bytes, u.name)
		}
	}
	return fmt.Sprintf("%dB", n)
}
