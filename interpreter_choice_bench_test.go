package wasmpy_test

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
)

// BenchmarkInterpreterChoice is what serving the sci interpreter (numpy)
// costs beside the default, for a long-lived server (serve, mcp) that
// loads it once: the load (New with a warm compilation cache, and the
// host's RSS it adds), a run of print(1) (p50, the guest's memory peak),
// the host RSS a run adds, 4 at once, and a run that uses numpy.
//
//	go test -run '^$' -bench InterpreterChoice -benchtime 20x .
func BenchmarkInterpreterChoice(b *testing.B) {
	for _, kind := range []string{"wasmpy", "sci"} {
		b.Run(kind, func(b *testing.B) {
			before := settledRSS(b)
			start := time.Now()
			sb, err := wasmpy.New(context.Background(), wasmpy.Config{Interpreter: kind})
			if err != nil {
				b.Skipf("%s: %v", kind, err)
			}
			defer sb.Close(context.Background())
			res, err := sb.Run(context.Background(), wasmpy.Job{Code: "print(1)"})
			require.NoError(b, err)
			require.Equal(b, "1\n", res.Stdout)
			loadMS, loadMiB := float64(time.Since(start).Milliseconds()), settledRSS(b)-before
			code := "print(1)"
			var times []time.Duration
			var peak uint64
			var worst float64
			for b.Loop() {
				base := settledRSS(b)
				require.NoError(b, os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)) // resets VmHWM
				var wg sync.WaitGroup
				var mu sync.Mutex
				for range 4 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						t := time.Now()
						res, err := sb.Run(context.Background(), wasmpy.Job{Code: code})
						d := time.Since(t)
						require.NoError(b, err)
						require.Nil(b, res.Error)
						mu.Lock()
						times, peak = append(times, d), max(peak, res.MemoryPeakBytes)
						mu.Unlock()
					}()
				}
				wg.Wait()
				worst = max(worst, (procStatusMiB(b, "VmHWM")-base)/4)
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2])/1e6, "p50-ms")
			b.ReportMetric(float64(peak)/(1<<20), "guest-peak-MiB")
			b.ReportMetric(worst, "host-MiB/run")
			b.ReportMetric(loadMS, "load-ms") // after the loop, which clears what came before
			b.ReportMetric(loadMiB, "load-MiB")
			if kind == "sci" {
				t := time.Now()
				res, err := sb.Run(context.Background(), wasmpy.Job{Code: "import numpy as np; print(int(np.arange(10).sum()))"})
				require.NoError(b, err)
				require.Equal(b, "45\n", res.Stdout, res.Stderr)
				b.ReportMetric(float64(time.Since(t).Microseconds())/1000, "numpy-run-ms")
			}
		})
	}
}
