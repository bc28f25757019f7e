//go:build linux

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
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
	{"session", "", "", 2}, // the worker's session's next turn (sessions.go)
}

// load sends requests through base with c workers (as many as ss has)
// until ctx ends, or a session turn shows a state it must not have.
func load(ctx context.Context, base string, ss *sessions) ([]answer, error) {
	c := len(ss.of)
	total := 0
	for _, r := range requests {
		total += r.weight
	}
	client := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: c}}
	var mu sync.Mutex
	var out []answer
	var failed error
	ctx, stop := context.WithCancel(ctx)
	defer stop()
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
				var a answer
				var err error
				if requests[i].path == "" {
					a, err = ss.turn(client, base, w)
				} else {
					a = send(client, base, i)
				}
				mu.Lock()
				out = append(out, a)
				if err != nil && failed == nil {
					failed = err
					stop()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out, failed
}

func send(client *http.Client, base string, i int) answer {
	a, _ := call(client, "POST", base+requests[i].path, requests[i].body)
	a.class = requests[i].class
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
