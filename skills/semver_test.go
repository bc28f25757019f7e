package skills

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCompareVersions(t *testing.T) {
	// semver.org's own example of precedence, then numbers past 9 and
	// past 64 bits, and build metadata.
	ordered := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
		"1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.0+build.1", "1.0.0+build.2", "1.2.0", "1.10.0", "2.0.0",
		"99999999999999999999.0.0"}
	for i := range ordered {
		for j := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			require.Equal(t, want, compareVersions(ordered[i], ordered[j]), "%s vs %s", ordered[i], ordered[j])
		}
	}
	shuffled := slices.Clone(ordered)
	slices.Reverse(shuffled)
	slices.SortFunc(shuffled, compareVersions)
	require.Equal(t, ordered, shuffled)
}
