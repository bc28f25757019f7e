package service_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/service"
)

// BenchmarkServeExecute is the load figure in BENCHMARKS.md: N concurrent
// clients ($WASMPY_BENCH_CLIENTS, default 8; the service's --max-concurrent
// is $WASMPY_BENCH_CONCURRENT, default GOMAXPROCS) POST to the service on
// loopback, every run recorded in SQLite; it fails on any non-200. echo is
// the service's own overhead (a trivial handler), text_summarize a real
// skill. Run it for a fixed time:
//
//	go test ./service -run '^$' -bench ServeExecute -benchtime 20s
func BenchmarkServeExecute(b *testing.B) {
	b.Run("echo", func(b *testing.B) {
		benchServe(b, "echo", map[string]any{"message": "hello"})
	})
	b.Run("text_summarize", func(b *testing.B) {
		benchServe(b, "text_summarize", map[string]any{"text": strings.Repeat(benchText, 2), "max_sentences": 3})
	})
}

func benchServe(b *testing.B, skill string, skillArgs map[string]any) {
	ex, reg, _ := fixtures(b)
	clients := 8
	if n, err := strconv.Atoi(os.Getenv("WASMPY_BENCH_CLIENTS")); err == nil && n > 0 {
		clients = n
	}
	concurrent := 0 // GOMAXPROCS
	if n, err := strconv.Atoi(os.Getenv("WASMPY_BENCH_CONCURRENT")); err == nil && n > 0 {
		concurrent = n
	}
	adm, err := runs.NewAdmission(runs.AdmissionConfig{MaxConcurrent: concurrent, MaxQueue: clients})
	if err != nil {
		b.Fatal(err)
	}
	svc, err := service.New(service.Config{Registry: reg, Executor: ex, Admission: adm})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	client := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()
	args, _ := json.Marshal(map[string]any{"args": skillArgs})

	post := func() (time.Duration, int) {
		start := time.Now()
		resp, err := client.Post(srv.URL+"/skills/"+skill+"/execute", "application/json", strings.NewReader(string(args)))
		if err != nil {
			return 0, -1
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return time.Since(start), resp.StatusCode
	}
	for range clients { // warm up: connections, sandbox
		post()
	}
	runtime.GC()
	rssBefore := rssMiB()

	var mu sync.Mutex
	var lat []time.Duration
	errs := 0
	work := make(chan struct{}, b.N)
	for range b.N {
		work <- struct{}{}
	}
	close(work)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			bad := 0
			for range work {
				d, status := post()
				if status != http.StatusOK {
					bad++
				}
				mine = append(mine, d)
			}
			mu.Lock()
			lat, errs = append(lat, mine...), errs+bad
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if errs > 0 {
		b.Fatalf("%d of %d requests failed", errs, b.N)
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	runtime.GC()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(clients), "clients")
	b.ReportMetric(rssBefore, "rss-before-MiB")
	b.ReportMetric(rssMiB(), "rss-after-MiB")
}

// rssMiB is this process's resident memory (Linux), else 0.
func rssMiB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

const benchText = `The city council approved the new transit plan on Tuesday after months of debate. The plan adds three bus lines and extends the tram network to the airport. Council members said the transit plan would cut commute times for thousands of residents. Critics argued that the plan costs too much and that the money should go to road repairs. Construction of the new tram lines starts next spring, and the bus lines open in the autumn. Funding for the transit plan comes from a regional tax approved by voters last year. `
