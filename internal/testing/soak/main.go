// Command soak drives `wasmpy serve`, started as a child process on
// loopback, with a bounded mix of good requests, bad JSON, schema
// violations, auth failures, floods, memory, time, fuel and output bombs,
// and callers that give up; then stops it and checks the provenance store.
// It passes when no answer is a 5xx other than a bomb's own failure, every
// answer has the status its request calls for, every run answered has its
// finished record with the same outcome, nothing is left running, the
// server logged no error, and its RSS stayed flat after warm-up.
//
//	go run ./internal/testing/soak -wasmpy bin/wasmpy -duration 10m   (make soak DURATION=10m)
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// options bound one soak.
type options struct {
	wasmpy      string
	skills      string
	duration    time.Duration
	maxRequests int
	clients     int
	seed        uint64
	serveArgs   []string
	keep        bool // keep the temporary directory (store, server log)
}

func main() {
	var o options
	flag.StringVar(&o.wasmpy, "wasmpy", "bin/wasmpy", "the wasmpy binary to serve with")
	flag.StringVar(&o.skills, "skills", "skills/examples", "the skills directory to serve")
	flag.DurationVar(&o.duration, "duration", 30*time.Second, "how long to send requests")
	flag.IntVar(&o.maxRequests, "max-requests", 1_000_000, "stop after this many requests")
	flag.IntVar(&o.clients, "clients", 6, "concurrent clients")
	flag.Uint64Var(&o.seed, "seed", uint64(time.Now().UnixNano()), "random seed of the mix")
	flag.BoolVar(&o.keep, "keep", false, "keep the store and the server log")
	flag.Parse()
	if flag.NArg() > 0 || o.duration <= 0 || o.clients < 1 || o.maxRequests < 1 {
		fmt.Fprintln(os.Stderr, "usage: soak [-wasmpy BIN] [-skills DIR] [-duration D] [-max-requests N] [-clients N] [-seed N] [-keep]")
		os.Exit(2)
	}
	o.serveArgs = []string{"--max-concurrent", "2", "--max-queue", "8", "--timeout", "5s", "--memory", "64MiB"}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
	if rep.verdict() != nil {
		os.Exit(1)
	}
}

// run soaks the server and prints the summary to out.
func run(ctx context.Context, o options, out io.Writer) (*report, error) {
	dir, err := os.MkdirTemp("", "wasmpy-soak-")
	if err != nil {
		return nil, err
	}
	srv, err := startServer(ctx, o.wasmpy, o.skills, dir, o.serveArgs)
	if err != nil {
		return nil, err
	}
	rep := soak(ctx, srv, o)
	rep.print(out, o)
	if len(rep.failures) > 0 || o.keep {
		fmt.Fprintf(out, "kept: %s (provenance.db, server.log)\n", dir)
	} else {
		os.RemoveAll(dir)
	}
	return rep, nil
}
