package wasmpy

import (
	"context"
	"fmt"
	"runtime"
	"time"
)

// admission bounds the runs a Sandbox has in progress (Config.MaxConcurrent):
// a run past the bound waits for a slot, for as long as its caller's ctx
// allows. The wait is not part of the run's own timeout, which starts when
// the run does, and the Result reports it (QueuedMS). Every run of the CPU
// beyond the cores only slows all of them: 50 runs started at once on two
// cores would each take 25 times as long and reach their timeouts together,
// where admitted two at a time each takes what it takes alone.
type admission struct {
	slots chan struct{} // nil: no bound
}

// MaxConcurrentRuns bounds Config.MaxConcurrent.
const MaxConcurrentRuns = 1 << 16

func checkMaxConcurrent(n int) error {
	if n > MaxConcurrentRuns {
		return fmt.Errorf("wasmpy: Config.MaxConcurrent %d: at most %d (negative: no bound)", n, MaxConcurrentRuns)
	}
	return nil
}

func newAdmission(max int) admission {
	switch {
	case max < 0:
		return admission{}
	case max == 0:
		max = runtime.NumCPU()
	}
	return admission{slots: make(chan struct{}, max)}
}

// acquire waits for a slot, and returns how long it waited and the func
// that gives the slot back.
func (a admission) acquire(ctx context.Context) (time.Duration, func(), error) {
	if a.slots == nil {
		return 0, func() {}, nil
	}
	release := func() { <-a.slots }
	select { // a free slot is taken without a clock reading
	case a.slots <- struct{}{}:
		return 0, release, nil
	default:
	}
	start := time.Now()
	select {
	case a.slots <- struct{}{}:
		return time.Since(start), release, nil
	case <-ctx.Done():
		return time.Since(start), nil, fmt.Errorf("wasmpy: waited %v for one of the sandbox's %d run slots (Config.MaxConcurrent): %w",
			time.Since(start).Round(time.Millisecond), cap(a.slots), context.Cause(ctx))
	}
}
