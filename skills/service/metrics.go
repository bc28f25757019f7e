package service

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// metrics are a handful of counters in the Prometheus text format, written
// by hand: not worth a dependency.
type metrics struct {
	inFlight atomic.Int64
	rejected atomic.Int64
	mu       sync.Mutex
	requests map[int]int64
	runs     map[[2]string]int64
	runMS    map[string]float64
}

func newMetrics() *metrics {
	return &metrics{requests: map[int]int64{}, runs: map[[2]string]int64{}, runMS: map[string]float64{}}
}

func (m *metrics) lock()   { m.mu.Lock() }
func (m *metrics) unlock() { m.mu.Unlock() }

func sortedKeys[K comparable, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
	return keys
}

func (m *metrics) request(status int) {
	m.lock()
	m.requests[status]++
	m.unlock()
}

func (m *metrics) execution(skill, outcome string, ms float64) {
	m.lock()
	m.runs[[2]string{skill, outcome}]++
	m.runMS[skill] += ms
	m.unlock()
}

func (s *Service) serveMetrics(w http.ResponseWriter, r *http.Request) {
	m := s.metrics
	var b strings.Builder
	m.lock()
	b.WriteString("# HELP wasmpy_http_requests_total HTTP requests answered, by status.\n# TYPE wasmpy_http_requests_total counter\n")
	for _, st := range sortedKeys(m.requests) {
		fmt.Fprintf(&b, "wasmpy_http_requests_total{status=\"%d\"} %d\n", st, m.requests[st])
	}
	b.WriteString("# HELP wasmpy_executions_total Skill executions, by skill and outcome (skill \"\" is POST /exec).\n# TYPE wasmpy_executions_total counter\n")
	for _, k := range sortedKeys(m.runs) {
		fmt.Fprintf(&b, "wasmpy_executions_total{skill=%q,outcome=%q} %d\n", k[0], k[1], m.runs[k])
	}
	b.WriteString("# HELP wasmpy_execution_duration_ms_total Time spent running, by skill.\n# TYPE wasmpy_execution_duration_ms_total counter\n")
	for _, k := range sortedKeys(m.runMS) {
		fmt.Fprintf(&b, "wasmpy_execution_duration_ms_total{skill=%q} %g\n", k, m.runMS[k])
	}
	m.unlock()
	fmt.Fprintf(&b, "# HELP wasmpy_executions_in_flight Runs in progress.\n# TYPE wasmpy_executions_in_flight gauge\nwasmpy_executions_in_flight %d\n", m.inFlight.Load())
	fmt.Fprintf(&b, "# HELP wasmpy_executions_queued Requests waiting for a run slot.\n# TYPE wasmpy_executions_queued gauge\nwasmpy_executions_queued %d\n", len(s.queue))
	fmt.Fprintf(&b, "# HELP wasmpy_executions_rejected_total Requests refused with 429.\n# TYPE wasmpy_executions_rejected_total counter\nwasmpy_executions_rejected_total %d\n", m.rejected.Load())
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	io.WriteString(w, b.String())
}
