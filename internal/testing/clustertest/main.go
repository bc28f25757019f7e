//go:build linux

// Command clustertest, behind `make cluster-test`, proves the multi-replica
// path on loopback: a throwaway PostgreSQL server (internal/pgtest),
// `wasmpy serve` replicas sharing it, and haproxy in front of them, checking
// /health/ready. It measures one replica (directly, then through the
// balancer) and three under the same load, then
// SIGKILLs a replica mid-load and starts it again, and checks the store:
// every 2xx answer has its finished record, no run was recorded twice, and
// the killed replica's in-flight runs are marked interrupted.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.wasmpy, "wasmpy", "bin/wasmpy", "the wasmpy binary")
	flag.StringVar(&cfg.haproxy, "haproxy", "", "the haproxy binary (default: from PATH or /usr/sbin)")
	flag.DurationVar(&cfg.duration, "duration", 5*time.Second, "load per measured phase; the kill phase runs twice as long")
	flag.IntVar(&cfg.concurrency, "concurrency", 8, "requests in flight through the balancer")
	flag.StringVar(&cfg.out, "out", "", "write the figures as JSON to this file")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "cluster-test: FAIL:", err)
		os.Exit(1)
	}
	fmt.Println("cluster-test: PASS")
}
