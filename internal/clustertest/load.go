package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// A request the load sends, and how it went.
type answer struct {
	class       string
	status      int    // 0: no answer
	err         string // why there was no answer, or the start of a non-2xx body
	executionID string
	latency     time.Duration
}

// requests are the load's mix: skill executions and raw code, cheap and
// slower (the slow ones keep runs in flight for the kill to catch).
var requests = []struct {
	class, path, body string
	weight            int
}{
	{"skill", "/skills/text_summarize/execute",
		`{"args": {"text": "Replicas share one store. Any replica answers. A killed one loses only its runs in flight. The others carry on.", "max_sentences": 2}, "actor_id": "load", "actor_type": "test"}`, 5},
	{"exec", "/exec", `{"code": "print(sum(range(1000)))", "actor_id": "load", "actor_type": "test"}`, 4},
	{"exec-slow", "/exec", `{"code": "n = 0\nfor i in range(100000):\n    n += i\nprint(n)", "actor_id": "load", "actor_type": "test"}`, 1},
}

// load sends requests through base with c workers until ctx ends.
func load(ctx context.Context, base string, c int) []answer {
	total := 0
	for _, r := range requests {
		total += r.weight
	}
	client := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: c}}
	var mu sync.Mutex
	var out []answer
	var wg sync.WaitGroup
	for w := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 19))
			for ctx.Err() == nil {
				pick := rng.IntN(total)
				i := 0
				for pick >= requests[i].weight {
					pick -= requests[i].weight
					i++
				}
				a := send(client, base, i)
				mu.Lock()
				out = append(out, a)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

func send(client *http.Client, base string, i int) answer {
	r := requests[i]
	a := answer{class: r.class}
	req, _ := http.NewRequest("POST", base+r.path, bytes.NewReader([]byte(r.body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		a.latency, a.err = time.Since(start), err.Error()
		return a
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		a.err = strings.TrimSpace(string(body[:min(len(body), 160)]))
	}
	a.latency = time.Since(start)
	a.status, a.executionID = resp.StatusCode, resp.Header.Get("X-Execution-Id")
	return a
}

// figures summarise a phase's answers.
type figures struct {
	Phase     string         `json:"phase"`
	Replicas  int            `json:"replicas"`
	Seconds   float64        `json:"seconds"`
	Requests  int            `json:"requests"`
	OK        int            `json:"ok"`
	ReqPerSec float64        `json:"req_per_s"` // 2xx answers per second
	P50MS     float64        `json:"p50_ms"`
	P99MS     float64        `json:"p99_ms"`
	Errors    map[string]int `json:"errors"` // by status ("no answer" when the connection failed)
	// Examples has one answer's body per error status.
	Examples map[string]string `json:"examples,omitempty"`
}

func summarise(phase string, replicas int, d time.Duration, as []answer) figures {
	f := figures{Phase: phase, Replicas: replicas, Seconds: d.Seconds(), Requests: len(as), Errors: map[string]int{}, Examples: map[string]string{}}
	var lat []time.Duration
	for _, a := range as {
		switch {
		case a.status >= 200 && a.status < 300:
			f.OK++
			lat = append(lat, a.latency)
		case a.status == 0:
			f.Errors["no answer: "+a.err]++
		default:
			f.Errors[fmt.Sprint(a.status)]++
			f.Examples[fmt.Sprint(a.status)] = a.err
		}
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		i := int(p/100*float64(len(lat))+0.999999) - 1
		return float64(lat[max(i, 0)].Microseconds()) / 1000
	}
	f.ReqPerSec, f.P50MS, f.P99MS = float64(f.OK)/d.Seconds(), pct(50), pct(99)
	return f
}

func (f figures) String() string {
	s := fmt.Sprintf("%-10s replicas=%d  %5.1f req/s  p50 %6.1f ms  p99 %7.1f ms  requests %d  errors %v",
		f.Phase, f.Replicas, f.ReqPerSec, f.P50MS, f.P99MS, f.Requests, f.Errors)
	for status, body := range f.Examples {
		s += fmt.Sprintf("\n    a %s: %s", status, body)
	}
	return s
}
