package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/stores"
)

// client is what the workers share: the server's address and token, and
// execution ids seen, for lookups.
type client struct {
	base, token string
	http        *http.Client
	mu          sync.Mutex
	recent      []string // the last ids answered, for GET /executions/{id}
}

func (c *client) someID(r *rand.Rand) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.recent) == 0 {
		return ""
	}
	return c.recent[r.IntN(len(c.recent))]
}

func (c *client) remember(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.recent) == 256 {
		c.recent = c.recent[1:]
	}
	c.recent = append(c.recent, id)
}

// classStats are one class's answers.
type classStats struct {
	statuses map[int]int
	latency  []time.Duration
	gaveUp   int // client-gone requests abandoned as planned
}

// rssSample is the server's RSS at a moment.
type rssSample struct {
	at  time.Duration
	rss uint64
}

// report is what a soak saw and what it found wrong.
type report struct {
	mu        sync.Mutex
	elapsed   time.Duration
	requests  int
	byStatus  map[int]int
	byClass   map[string]*classStats
	outcomes  map[string]string // execution id → the outcome its answer gave
	bad5xx    int               // 5xx that were not a guest's own failure
	failures  []string          // what went wrong, the first few of each kind
	failKinds map[string]int

	rss                             []rssSample
	warmup                          time.Duration
	rssStart, rssWarm, rssEnd, peak uint64

	checked, lost, mismatched, unfinished, interrupted int
	storeTotal                                         int
	storeOutcomes                                      map[string]int
	serverExit                                         error
	serverErrLines                                     int
	serverErrSample                                    []string
}

func newReport() *report {
	return &report{byStatus: map[int]int{}, byClass: map[string]*classStats{}, outcomes: map[string]string{},
		failKinds: map[string]int{}, storeOutcomes: map[string]int{}}
}

// verdict is the soak's result: nil when nothing went wrong, else an error
// naming each kind of failure with its count, and the first failure.
func (r *report) verdict() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.failures) == 0 {
		return nil
	}
	var kinds []string
	for _, k := range sortedKeys(r.failKinds) {
		kinds = append(kinds, fmt.Sprintf("%s ×%d", k, r.failKinds[k]))
	}
	return fmt.Errorf("%s (first: %s)", strings.Join(kinds, ", "), r.failures[0])
}

// fail records a failure; only the first three of each kind are kept whole.
func (r *report) fail(kind, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failKinds[kind]++
	if r.failKinds[kind] <= 3 {
		r.failures = append(r.failures, kind+": "+fmt.Sprintf(format, args...))
	}
}

// soak runs the workers until the duration or the request count runs out,
// then stops the server and checks its store.
func soak(ctx context.Context, srv *server, o options) *report {
	rep := newReport()
	rep.warmup = min(max(o.duration/4, 10*time.Second), 2*time.Minute)
	c := &client{base: "http://" + srv.addr, token: srv.token, http: &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}}

	start := time.Now()
	deadline := start.Add(o.duration)
	var sent atomic.Int64
	done := func() bool {
		return ctx.Err() != nil || time.Now().After(deadline) || sent.Load() >= int64(o.maxRequests)
	}
	if v, err := srv.rss(); err == nil {
		rep.rssStart = v
	}
	sampled := make(chan struct{})
	stopSampling := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-t.C:
				if v, err := srv.rss(); err == nil {
					rep.mu.Lock()
					rep.rss = append(rep.rss, rssSample{time.Since(start), v})
					rep.mu.Unlock()
				}
			}
		}
	}()

	var wg sync.WaitGroup
	for w := range o.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(o.seed, uint64(w)))
			for !done() {
				if exited, err := srv.exited(); exited {
					rep.fail("server died", "wasmpy serve exited mid-soak: %v", err)
					return
				}
				cl := pick(r)
				n := max(cl.burst, 1)
				sent.Add(int64(n))
				reqs := make([]*http.Request, n)
				for i := range reqs {
					method, path, body, header := cl.build(r, c)
					req, err := c.newRequest(method, path, body, header)
					if err != nil {
						rep.fail("client", "%v", err)
						return
					}
					reqs[i] = req
				}
				var burst sync.WaitGroup
				for _, req := range reqs {
					burst.Add(1)
					go func() {
						defer burst.Done()
						rep.send(c, cl, req)
					}()
				}
				burst.Wait()
			}
		}()
	}
	wg.Wait()
	rep.elapsed = time.Since(start)
	close(stopSampling)
	<-sampled
	rep.judgeRSS()

	rep.serverExit = srv.stop(time.Minute)
	if rep.serverExit != nil {
		rep.fail("server exit", "after SIGTERM: %v", rep.serverExit)
	}
	srv.mu.Lock()
	rep.serverErrLines, rep.serverErrSample = srv.errLines, srv.errSample
	srv.mu.Unlock()
	if rep.serverErrLines > 0 {
		rep.fail("server log", "%d error lines, e.g. %s", rep.serverErrLines, rep.serverErrSample[0])
	}
	rep.checkStore(context.WithoutCancel(ctx), srv.db)
	return rep
}

// runsCode says whether a class's request would take a run slot, so may
// be turned away with 429 when the queue is full.
func (cl *class) runsCode(method string) bool {
	return method == http.MethodPost && (cl.guest || slices.Contains(cl.want, http.StatusOK))
}

// send sends one request and checks its answer.
func (r *report) send(c *client, cl *class, req *http.Request) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	if cl.cancel > 0 {
		ctx, cancel = context.WithTimeout(context.Background(), cl.cancel)
	}
	defer cancel()
	t0 := time.Now()
	resp, err := c.http.Do(req.WithContext(ctx))
	if err != nil {
		if cl.cancel > 0 && errors.Is(err, context.DeadlineExceeded) {
			r.mu.Lock()
			r.stats(cl).gaveUp++
			r.requests++
			r.mu.Unlock()
			return
		}
		r.fail("transport", "%s %s: %v", cl.name, req.URL.Path, err)
		return
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	resp.Body.Close()
	lat := time.Since(t0)
	if err != nil {
		r.fail("transport", "%s: reading the answer: %v", cl.name, err)
		return
	}
	var body struct {
		Error *struct {
			Code string `json:"code"`
			Kind string `json:"kind"`
		} `json:"error"`
		Provenance *struct {
			ExecutionID string `json:"execution_id"`
			Outcome     string `json:"outcome"`
		} `json:"provenance"`
	}
	isJSON := resp.Header.Get("Content-Type") == "application/json" && json.Valid(raw)
	if !isJSON && req.URL.Path != "/metrics" { // the one endpoint in Prometheus text
		r.fail("not JSON", "%s: %d %.200q", cl.name, resp.StatusCode, raw)
	}
	json.Unmarshal(raw, &body) // a provenance record's "error" is a string: left nil
	id := resp.Header.Get("X-Execution-Id")
	st := resp.StatusCode

	r.mu.Lock()
	r.requests++
	r.byStatus[st]++
	s := r.stats(cl)
	s.statuses[st]++
	s.latency = append(s.latency, lat)
	if id != "" && body.Provenance != nil {
		r.outcomes[id] = body.Provenance.Outcome
	}
	r.mu.Unlock()

	if id != "" {
		c.remember(id)
	}
	short := fmt.Sprintf("%s %s: %d %.300s", cl.name, req.URL.Path, st, strings.TrimSpace(string(raw)))
	switch {
	case st >= 500 && !cl.guest:
		r.mu.Lock()
		r.bad5xx++
		r.mu.Unlock()
		r.fail("5xx", "%s", short)
	case st == http.StatusTooManyRequests && cl.runsCode(req.Method):
	case !cl.allows(st):
		r.fail("unexpected status", "%s", short)
	case st != http.StatusOK && cl.code != "" && (body.Error == nil || body.Error.Code != cl.code):
		r.fail("unexpected code", "%s", short)
	case cl.kind != "" && st != http.StatusOK && (body.Error == nil || body.Error.Kind != cl.kind):
		r.fail("unexpected kind", "%s", short)
	}
	if strings.Contains(string(raw), "goroutine ") {
		r.fail("stack trace", "%s", short)
	}
	if st == http.StatusOK && req.Method == http.MethodPost && id == "" {
		r.fail("no execution id", "%s", short)
	}
	if id != "" && (body.Provenance == nil || body.Provenance.ExecutionID != id) {
		r.fail("no provenance", "%s", short)
	}
}

func (r *report) stats(cl *class) *classStats {
	s := r.byClass[cl.name]
	if s == nil {
		s = &classStats{statuses: map[int]int{}}
		r.byClass[cl.name] = s
	}
	return s
}

// judgeRSS reads the samples. After warm-up and at the end are the medians
// of the first and last thirds of the samples after warm-up, so that a
// bomb's passing peak (up to two runs of 64 MiB each) does not decide; the
// end may not pass the warm-up figure by more than 10% plus 32 MiB.
func (r *report) judgeRSS() {
	var after []uint64
	for _, s := range r.rss {
		r.peak = max(r.peak, s.rss)
		if s.at >= r.warmup {
			after = append(after, s.rss)
		}
	}
	if len(after) < 10 {
		r.fail("rss", "only %d samples after the %s warm-up: soak longer", len(after), r.warmup)
		return
	}
	n := len(after) / 3
	r.rssWarm, r.rssEnd = median(after[:n]), median(after[len(after)-n:])
	if float64(r.rssEnd) > 1.10*float64(r.rssWarm)+32<<20 {
		r.fail("rss", "grew from %s after warm-up to %s at the end", mib(r.rssWarm), mib(r.rssEnd))
	}
}

func median(v []uint64) uint64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// checkStore opens the stopped server's store: every execution answered has
// its record, finished, with the outcome its answer gave, and none is left
// running.
func (r *report) checkStore(ctx context.Context, db string) {
	st, err := stores.Open(ctx, db)
	if err != nil {
		r.fail("store", "opening %s: %v", db, err)
		return
	}
	defer st.Close()
	r.interrupted = st.Interrupted()
	if r.interrupted > 0 {
		r.fail("store", "%d records were left running", r.interrupted)
	}
	for id, outcome := range r.outcomes {
		r.checked++
		rec, err := st.Get(ctx, id)
		switch {
		case err != nil:
			r.lost++
			r.fail("lost record", "%s: %v", id, err)
		case rec.Outcome != outcome:
			r.mismatched++
			r.fail("record differs", "%s: answered %q, stored %q", id, outcome, rec.Outcome)
		case rec.FinishedAt == nil:
			r.unfinished++
			r.fail("record unfinished", "%s", id)
		}
	}
	stats, err := st.Stats(ctx, provenance.Filter{})
	if err != nil {
		r.fail("store", "stats: %v", err)
		return
	}
	for _, s := range stats {
		r.storeTotal += s.Total
		for o, n := range s.Outcomes {
			r.storeOutcomes[o] += n
		}
	}
	if r.storeTotal < r.checked {
		r.fail("store", "holds %d records for %d executions answered", r.storeTotal, r.checked)
	}
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// print writes the summary.
func (r *report) print(w io.Writer, o options) {
	fmt.Fprintf(w, "soak: %s of %d clients (seed %d) against %s serve %s\n", r.elapsed.Round(time.Millisecond), o.clients, o.seed, o.wasmpy, strings.Join(o.serveArgs, " "))
	fmt.Fprintf(w, "requests: %d (%.1f/s)  by status:", r.requests, float64(r.requests)/r.elapsed.Seconds())
	for _, st := range sortedKeys(r.byStatus) {
		fmt.Fprintf(w, " %d×%d", st, r.byStatus[st])
	}
	fmt.Fprintf(w, "\n%-18s %7s  %-34s %10s %10s\n", "class", "count", "statuses", "p50", "p99")
	var all []time.Duration
	names := make([]string, 0, len(r.byClass))
	for n := range r.byClass {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := r.byClass[n]
		var sts []string
		for _, st := range sortedKeys(s.statuses) {
			sts = append(sts, fmt.Sprintf("%d×%d", st, s.statuses[st]))
		}
		if s.gaveUp > 0 {
			sts = append(sts, fmt.Sprintf("gave up×%d", s.gaveUp))
		}
		all = append(all, s.latency...)
		fmt.Fprintf(w, "%-18s %7d  %-34s %10s %10s\n", n, len(s.latency)+s.gaveUp, strings.Join(sts, " "), ms(pct(s.latency, .5)), ms(pct(s.latency, .99)))
	}
	fmt.Fprintf(w, "%-18s %7d  %-34s %10s %10s\n", "all answered", len(all), "", ms(pct(all, .5)), ms(pct(all, .99)))
	fmt.Fprintf(w, "5xx other than a guest's own failure: %d\n", r.bad5xx)
	fmt.Fprintf(w, "provenance: %d executions answered, %d found finished with the same outcome, %d lost, %d differ, %d unfinished, %d left running; the store holds %d records: %v\n",
		r.checked, r.checked-r.lost-r.mismatched-r.unfinished, r.lost, r.mismatched, r.unfinished, r.interrupted, r.storeTotal, r.storeOutcomes)
	fmt.Fprintf(w, "server RSS: start %s; medians of the first and last thirds after the %s warm-up %s and %s; peak %s (%d samples)\n",
		mib(r.rssStart), r.warmup, mib(r.rssWarm), mib(r.rssEnd), mib(r.peak), len(r.rss))
	if len(r.rss) > 0 {
		fmt.Fprint(w, "server RSS over time:")
		for i := range 11 {
			smp := r.rss[min(len(r.rss)-1, i*len(r.rss)/10)]
			fmt.Fprintf(w, " %s %.0f", smp.at.Round(time.Second), float64(smp.rss)/(1<<20))
		}
		fmt.Fprintln(w, " (MiB)")
	}
	fmt.Fprintf(w, "server: exit after SIGTERM: %v; %d error log lines\n", errOrOK(r.serverExit), r.serverErrLines)
	if len(r.failures) == 0 {
		fmt.Fprintln(w, "PASS")
		return
	}
	for _, k := range sortedKeys(r.failKinds) {
		fmt.Fprintf(w, "FAIL %s: %d\n", k, r.failKinds[k])
	}
	for _, f := range r.failures {
		fmt.Fprintln(w, "  "+f)
	}
}

func errOrOK(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func sortedKeys[K int | string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
