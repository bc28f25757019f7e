package runs

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/skills"
)

// Codes of the errors Admission returns, beside the Executor's.
const (
	CodeBusy     = "busy"     // every run slot is taken and the queue is full
	CodeCanceled = "canceled" // the caller went away
)

// MaxConcurrentRuns bounds AdmissionConfig.MaxConcurrent.
const MaxConcurrentRuns = 1 << 16

// DefaultRequestTimeout is AdmissionConfig.RequestTimeout's default.
const DefaultRequestTimeout = time.Minute

// AdmissionConfig bounds the runs every front end (HTTP, MCP) starts
// together.
type AdmissionConfig struct {
	// MaxConcurrent bounds the runs in progress; 0 means GOMAXPROCS.
	MaxConcurrent int
	// MaxQueue bounds the requests waiting for a run slot, beyond which
	// they are refused (busy); 0 means 4 × MaxConcurrent, negative means no
	// queue.
	MaxQueue int
	// RequestTimeout bounds a run request, waiting included; 0 means
	// DefaultRequestTimeout. A skill's own timeout applies within it, and a
	// request may ask for less (Admission.Run's timeout).
	RequestTimeout time.Duration
}

// Admission is the one execution gate of a server: a bounded number of run
// slots, a bounded queue in front of them, a timeout on every request, and
// the counters /metrics reports. HTTP and MCP share one, so they share its
// limits, and its errors are *skills.Error with stable codes (busy, timeout,
// canceled). It is safe for concurrent use.
type Admission struct {
	cfg      AdmissionConfig
	slots    chan struct{}
	queue    chan struct{}
	rejected atomic.Int64

	mu    sync.Mutex
	runs  map[[2]string]int64 // by skill and outcome
	runMS map[string]float64  // by skill
}

// NewAdmission checks cfg and fills in its defaults.
func NewAdmission(cfg AdmissionConfig) (*Admission, error) {
	if cfg.MaxConcurrent > MaxConcurrentRuns {
		return nil, fmt.Errorf("runs: MaxConcurrent %d: at most %d", cfg.MaxConcurrent, MaxConcurrentRuns)
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = runtime.GOMAXPROCS(0)
	}
	switch {
	case cfg.MaxQueue == 0:
		cfg.MaxQueue = 4 * cfg.MaxConcurrent
	case cfg.MaxQueue < 0:
		cfg.MaxQueue = 0
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	return &Admission{cfg: cfg, slots: make(chan struct{}, cfg.MaxConcurrent), queue: make(chan struct{}, cfg.MaxQueue),
		runs: map[[2]string]int64{}, runMS: map[string]float64{}}, nil
}

// Config is the configuration in force, defaults filled in.
func (a *Admission) Config() AdmissionConfig { return a.cfg }

// Run takes a run slot (waiting in the queue if need be), calls run with a
// context bounded by the request timeout (or by timeout, when positive and
// shorter), releases the slot and counts the execution. Its errors are
// *skills.Error (busy, timeout, canceled) when the request never got to run or the
// caller went away, else run's own.
func (a *Admission) Run(ctx context.Context, timeout time.Duration, run func(context.Context) (*Execution, error)) (*Execution, error) {
	if timeout <= 0 || timeout > a.cfg.RequestTimeout {
		timeout = a.cfg.RequestTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	release, err := a.acquire(rctx)
	if err != nil {
		return nil, err
	}
	x, err := run(rctx)
	release()
	switch {
	case err == nil:
		a.count(x.Record)
		return x, nil
	case ctx.Err() != nil:
		return nil, &skills.Error{Code: CodeCanceled, Message: "the client went away"}
	case errors.Is(rctx.Err(), context.DeadlineExceeded):
		return nil, &skills.Error{Code: CodeTimeout, Message: "the request timed out before the run could start"}
	}
	return nil, err
}

// acquire takes a run slot, waiting in the bounded queue if need be.
func (a *Admission) acquire(ctx context.Context) (release func(), err error) {
	select {
	case a.slots <- struct{}{}:
		return func() { <-a.slots }, nil
	default:
	}
	select {
	case a.queue <- struct{}{}:
	default:
		a.rejected.Add(1)
		return nil, &skills.Error{Code: CodeBusy, Message: fmt.Sprintf("busy: %d runs in progress and %d waiting; retry later", cap(a.slots), cap(a.queue))}
	}
	defer func() { <-a.queue }()
	select {
	case a.slots <- struct{}{}:
		return func() { <-a.slots }, nil
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, &skills.Error{Code: CodeTimeout, Message: "timed out waiting for a free run slot"}
		}
		return nil, &skills.Error{Code: CodeCanceled, Message: "canceled"}
	}
}

func (a *Admission) count(rec *provenance.Record) {
	a.mu.Lock()
	a.runs[[2]string{rec.Skill, rec.Outcome}]++
	a.runMS[rec.Skill] += rec.DurationMS
	a.mu.Unlock()
}

// AdmissionStats is a snapshot of an Admission's counters.
type AdmissionStats struct {
	InFlight int // runs in progress
	Queued   int // requests waiting for a slot
	Rejected int64
	// Executions counts finished runs by skill ("" for raw code) and
	// outcome; DurationMS sums their run time by skill.
	Executions []ExecutionCount
	DurationMS map[string]float64
}

// ExecutionCount is how many runs of a skill ended with an outcome.
type ExecutionCount struct {
	Skill, Outcome string
	Count          int64
}

// Stats returns the counters, executions sorted by skill then outcome.
func (a *Admission) Stats() AdmissionStats {
	st := AdmissionStats{InFlight: len(a.slots), Queued: len(a.queue), Rejected: a.rejected.Load(), DurationMS: map[string]float64{}}
	a.mu.Lock()
	for k, n := range a.runs {
		st.Executions = append(st.Executions, ExecutionCount{Skill: k[0], Outcome: k[1], Count: n})
	}
	for k, ms := range a.runMS {
		st.DurationMS[k] = ms
	}
	a.mu.Unlock()
	sort.Slice(st.Executions, func(i, j int) bool {
		x, y := st.Executions[i], st.Executions[j]
		return x.Skill < y.Skill || x.Skill == y.Skill && x.Outcome < y.Outcome
	})
	return st
}
