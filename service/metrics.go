package service

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
)

// metrics counts HTTP requests; the executions are counted by the
// Admission every front end shares. /metrics writes both in the Prometheus
// text format, by hand: not worth a dependency.
type metrics struct {
	mu       sync.Mutex
	requests map[int]int64
}

func newMetrics() *metrics { return &metrics{requests: map[int]int64{}} }

func (m *metrics) request(status int) {
	m.mu.Lock()
	m.requests[status]++
	m.mu.Unlock()
}

func (s *Service) serveMetrics(w http.ResponseWriter, r *http.Request) error {
	var b strings.Builder
	s.metrics.mu.Lock()
	statuses := make([]int, 0, len(s.metrics.requests))
	for st := range s.metrics.requests {
		statuses = append(statuses, st)
	}
	sort.Ints(statuses)
	b.WriteString("# HELP wasmpy_http_requests_total HTTP requests answered, by status.\n# TYPE wasmpy_http_requests_total counter\n")
	for _, st := range statuses {
		fmt.Fprintf(&b, "wasmpy_http_requests_total{status=\"%d\"} %d\n", st, s.metrics.requests[st])
	}
	s.metrics.mu.Unlock()
	st := s.adm.Stats()
	b.WriteString("# HELP wasmpy_executions_total Skill executions, by skill and outcome (skill \"\" is raw code: POST /exec, MCP run_python).\n# TYPE wasmpy_executions_total counter\n")
	for _, x := range st.Executions {
		fmt.Fprintf(&b, "wasmpy_executions_total{skill=%q,outcome=%q} %d\n", x.Skill, x.Outcome, x.Count)
	}
	skillNames := make([]string, 0, len(st.DurationMS))
	for k := range st.DurationMS {
		skillNames = append(skillNames, k)
	}
	sort.Strings(skillNames)
	b.WriteString("# HELP wasmpy_execution_duration_ms_total Time spent running, by skill.\n# TYPE wasmpy_execution_duration_ms_total counter\n")
	for _, k := range skillNames {
		fmt.Fprintf(&b, "wasmpy_execution_duration_ms_total{skill=%q} %g\n", k, st.DurationMS[k])
	}
	fmt.Fprintf(&b, "# HELP wasmpy_executions_in_flight Runs in progress.\n# TYPE wasmpy_executions_in_flight gauge\nwasmpy_executions_in_flight %d\n", st.InFlight)
	fmt.Fprintf(&b, "# HELP wasmpy_executions_queued Requests waiting for a run slot.\n# TYPE wasmpy_executions_queued gauge\nwasmpy_executions_queued %d\n", st.Queued)
	fmt.Fprintf(&b, "# HELP wasmpy_executions_rejected_total Requests refused as busy (429).\n# TYPE wasmpy_executions_rejected_total counter\nwasmpy_executions_rejected_total %d\n", st.Rejected)
	ss := s.cfg.Executor.SessionStats()
	fmt.Fprintf(&b, "# HELP wasmpy_sessions_open Sessions open in memory.\n# TYPE wasmpy_sessions_open gauge\nwasmpy_sessions_open %d\n", ss.Open)
	fmt.Fprintf(&b, "# HELP wasmpy_sessions_max The most sessions open at once.\n# TYPE wasmpy_sessions_max gauge\nwasmpy_sessions_max %d\n", ss.Max)
	for _, c := range []struct {
		name, help string
		n          uint64
	}{
		{"created", "Sessions opened, forked or restored.", ss.Created},
		{"expired", "Sessions closed in memory for idling past their TTL.", ss.Expired},
		{"refused", "Sessions refused: the most were open.", ss.Refused},
		{"discarded_turns", "Session turns whose state passed the size limit, not kept.", ss.Discards},
	} {
		fmt.Fprintf(&b, "# HELP wasmpy_sessions_%s_total %s\n# TYPE wasmpy_sessions_%s_total counter\nwasmpy_sessions_%s_total %d\n", c.name, c.help, c.name, c.name, c.n)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	io.WriteString(w, b.String())
	return nil
}
