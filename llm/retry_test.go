package llm

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBackoff(t *testing.T) {
	base, ceil := 100*time.Millisecond, 2*time.Second
	for n, full := range []time.Duration{100, 200, 400, 800, 1600, 2000, 2000} {
		full *= time.Millisecond
		for range 50 {
			d := Backoff(base, ceil, n)
			require.GreaterOrEqual(t, d, full/2, "retry %d", n)
			require.LessOrEqual(t, d, full, "retry %d", n)
		}
	}
	require.LessOrEqual(t, Backoff(base, ceil, 200), ceil, "no overflow")
	seen := map[time.Duration]bool{}
	for range 20 {
		seen[Backoff(time.Second, time.Minute, 3)] = true
	}
	require.Greater(t, len(seen), 1, "jitter")
}
