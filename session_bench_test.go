package wasmpy_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
)

// BenchmarkSessionTurn is one turn of a session, in process, start to
// result, for a small state and for a session holding a list of about
// 50 MB; it reports the p50 and p99 and the state's saved size. Back to
// back, every turn also pays for starting the instance of the next one;
// "spaced" turns come 10 ms apart, as an agent's do, and find it ready.
//
//	go test -run '^$' -bench SessionTurn -benchtime 200x
func BenchmarkSessionTurn(b *testing.B) {
	for _, c := range []struct{ name, setup string }{
		{"small", "x = 0\nimport json\ndef f(v): return json.dumps(v)"},
		{"small-spaced", "x = 0\nimport json\ndef f(v): return json.dumps(v)"},
		// 1.4M ints in a list: 11 MB of pointers and 39 MB of ints.
		{"list-50MB", "x = 0\nbig = [i * 7 for i in range(1_400_000)]"},
		{"list-50MB-spaced", "x = 0\nbig = [i * 7 for i in range(1_400_000)]"},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			sess, err := testSandbox(b).NewSession(ctx)
			require.NoError(b, err)
			defer sess.Close()
			res, err := sess.Run(ctx, wasmpy.Job{Code: c.setup})
			require.NoError(b, err)
			require.NoError(b, res.Err())
			var times []time.Duration
			for b.Loop() {
				if strings.HasSuffix(c.name, "-spaced") {
					time.Sleep(10 * time.Millisecond) // in ns/op, not in p50-ms
				}
				start := time.Now()
				res, err := sess.Run(ctx, wasmpy.Job{Code: "x += 1"})
				times = append(times, time.Since(start))
				require.NoError(b, err)
				require.NoError(b, res.Err())
			}
			slices.Sort(times)
			var saved bytes.Buffer
			require.NoError(b, sess.Save(&saved))
			info, err := sess.Info()
			require.NoError(b, err)
			b.ReportMetric(float64(times[len(times)/2])/1e6, "p50-ms")
			b.ReportMetric(float64(times[len(times)*99/100])/1e6, "p99-ms")
			b.ReportMetric(float64(info.StateBytes)/1e6, "state-MB")
			b.ReportMetric(float64(saved.Len())/1e6, "saved-MB")
		})
	}
}
