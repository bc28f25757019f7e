// Package units reads the sizes configuration files give limits in.
package units

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize reads "1048576", "64MiB", "1GiB", "512KiB" (also K, M, G, B):
// bytes, in binary units.
func ParseSize(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	mult := uint64(1)
	for _, u := range []struct {
		suffix string
		mult   uint64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > (1<<62)/mult {
		return 0, fmt.Errorf("bad size")
	}
	return n * mult, nil
}
