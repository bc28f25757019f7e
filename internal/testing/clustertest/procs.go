//go:build linux

package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// token is the bearer token every replica asks for (as a Kubernetes Secret
// would give it); health checks need none.
const token = "cluster-test-token"

// replica is one `wasmpy serve` process.
type replica struct {
	name, addr, db, log, bin string
	cmd                      *exec.Cmd
	done                     chan error
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// start runs the replica and waits, up to two minutes, for /health/ready.
func (r *replica) start(ctx context.Context) error {
	logf, err := os.OpenFile(r.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	r.cmd = exec.Command(r.bin, "serve", "--db", r.db, "--addr", r.addr, "--enable-exec",
		"--log-format", "json", "--shutdown-timeout", "30s")
	r.cmd.Env = append(os.Environ(), "WASMPY_TOKENS="+token)
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", r.name, err)
	}
	r.done = make(chan error, 1)
	go func() { r.done <- r.cmd.Wait() }()
	return waitReady(ctx, "http://"+r.addr+"/health/ready", r.done, func() string { return r.name + ": " + tail(r.log, 5) })
}

// waitReady polls url until it answers 200, the process ends, or two
// minutes pass.
func waitReady(ctx context.Context, url string, exited chan error, why func() string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("exited (%v): %s", err, why())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after two minutes: %s", why())
		}
	}
}

// stop asks the replica to shut down gracefully and waits for it.
func (r *replica) stop() error {
	if r.cmd == nil {
		return nil
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-r.done:
		r.cmd = nil
		return err
	case <-time.After(time.Minute):
		r.cmd.Process.Kill()
		<-r.done
		r.cmd = nil
		return fmt.Errorf("%s did not stop within a minute", r.name)
	}
}

// balancer is haproxy in front of the replicas.
type balancer struct {
	bin, dir, addr string
	stats          string // where haproxy answers with the number of replicas it routes to
	cmd            *exec.Cmd
	done           chan error
}

func haproxyBinary(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if p, err := exec.LookPath("haproxy"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/haproxy"); err == nil {
		return "/usr/sbin/haproxy", nil
	}
	return "", fmt.Errorf("haproxy not found: install Debian's haproxy package (`make setup` does, as root: apt-get install haproxy)")
}

// haproxyConfig routes to the replicas that pass /health/ready, checked
// every 500ms. A request is retried on another replica when its connection
// is refused or its answer is a 503 (a replica restarted in place answers
// before the checks see it is not ready, and its 503 loading means nothing
// ran); one that got no answer never is: it may have run.
const haproxyConfig = `global
	maxconn 4096
defaults
	mode http
	timeout connect 2s
	timeout client 2m
	timeout server 2m
	retries 2
	retry-on conn-failure 503
	option redispatch 1
frontend wasmpy
	bind %s
	default_backend replicas
backend replicas
	balance leastconn
	option httpchk GET /health/ready
	http-check expect status 200
	default-server inter 500ms fall 2 rise 2
%s`

// start (re)starts haproxy over these replicas and waits until every one
// of them is up behind it.
func (b *balancer) start(ctx context.Context, replicas []*replica) error {
	if err := b.stop(); err != nil {
		return err
	}
	var servers strings.Builder
	for _, r := range replicas {
		fmt.Fprintf(&servers, "\tserver %s %s check\n", r.name, r.addr)
	}
	servers.WriteString("listen stats\n\tbind " + b.stats + "\n\thttp-request return status 200 content-type text/plain lf-string \"%[nbsrv(replicas)]\"\n")
	cfg := filepath.Join(b.dir, "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(haproxyConfig, b.addr, servers.String())), 0o644); err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(b.dir, "haproxy.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	b.cmd = exec.Command(b.bin, "-f", cfg, "-db")
	b.cmd.Stdout, b.cmd.Stderr = logf, logf
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := b.cmd.Start(); err != nil {
		return fmt.Errorf("haproxy: %w", err)
	}
	b.done = make(chan error, 1)
	go func() { b.done <- b.cmd.Wait() }()
	return b.waitUp(ctx, len(replicas))
}

// waitUp waits, up to two minutes, until haproxy routes to n replicas.
func (b *balancer) waitUp(ctx context.Context, n int) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if resp, err := http.Get("http://" + b.stats + "/"); err == nil {
			var up int
			fmt.Fscan(resp.Body, &up)
			resp.Body.Close()
			if up == n {
				return nil
			}
		}
		select {
		case err := <-b.done:
			b.done <- err
			return fmt.Errorf("haproxy exited (%v): %s", err, tail(filepath.Join(b.dir, "haproxy.log"), 5))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("haproxy did not route to %d replicas within two minutes: %s", n, tail(filepath.Join(b.dir, "haproxy.log"), 5))
		}
	}
}

func (b *balancer) stop() error {
	if b.cmd == nil {
		return nil
	}
	b.cmd.Process.Signal(syscall.SIGTERM)
	<-b.done
	b.cmd = nil
	return nil
}

// tail is the last n lines of a log file, on one line.
func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}
