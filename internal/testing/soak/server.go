package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// server is `wasmpy serve` running as a child process on loopback.
type server struct {
	cmd   *exec.Cmd
	addr  string
	token string
	db    string
	log   *os.File
	exit  chan error // the process's end, once

	mu        sync.Mutex
	errLines  int      // log lines at level ERROR
	errSample []string // the first few
}

// startServer starts wasmpy serve with a token, the skills in skillsDir and
// POST /exec on, and waits until it listens.
func startServer(ctx context.Context, wasmpy, skillsDir, dir string, extra []string) (*server, error) {
	s := &server{token: "soak-" + strconv.FormatInt(time.Now().UnixNano(), 36), db: filepath.Join(dir, "provenance.db"), exit: make(chan error, 1)}
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("# soak\n"+s.token+"\n"), 0o600); err != nil {
		return nil, err
	}
	var err error
	if s.log, err = os.Create(filepath.Join(dir, "server.log")); err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--skills", skillsDir, "--addr", "127.0.0.1:0", "--db", s.db,
		"--tokens-file", tokens, "--enable-exec", "--log-format", "json"}, extra...)
	s.cmd = exec.Command(wasmpy, args...)
	s.cmd.Env = append(os.Environ(), "WASMPY_TOKENS=")
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	listening := make(chan string, 1)
	go s.readLog(stderr, listening)
	go func() { s.exit <- s.cmd.Wait() }()
	select {
	case s.addr = <-listening:
	case err := <-s.exit:
		s.exit <- err
		return nil, fmt.Errorf("wasmpy serve exited before listening (%v); its log: %s", err, s.log.Name())
	case <-time.After(2 * time.Minute):
		s.cmd.Process.Kill()
		return nil, fmt.Errorf("wasmpy serve did not listen within 2 minutes; its log: %s", s.log.Name())
	case <-ctx.Done():
		s.cmd.Process.Kill()
		return nil, ctx.Err()
	}
	if err := s.waitReady(ctx, time.Now().Add(2*time.Minute)); err != nil {
		s.cmd.Process.Kill()
		return nil, err
	}
	return s, nil
}

// waitReady polls /health until every skill has loaded: serve answers
// before its skills are checked.
func (s *server) waitReady(ctx context.Context, deadline time.Time) error {
	for {
		var h struct {
			Skills  int `json:"skills"`
			Broken  int `json:"broken_skills"`
			Loading int `json:"loading_skills"`
		}
		resp, err := http.Get("http://" + s.addr + "/health")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
		}
		switch {
		case err == nil && h.Broken > 0:
			return fmt.Errorf("%d skills did not load; see %s", h.Broken, s.log.Name())
		case err == nil && h.Loading == 0 && h.Skills > 0:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("skills still loading after 2 minutes (last: %+v, %v)", h, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// readLog copies the server's JSON log to its file, counting the errors
// and reporting the address it listens on.
func (s *server) readLog(r io.Reader, listening chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		s.log.Write(append(line, '\n'))
		var entry struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
			Addr  string `json:"addr"`
		}
		if json.Unmarshal(line, &entry) != nil {
			entry.Level = "ERROR" // not the structured log: a crash or a stray print
		}
		if entry.Msg == "listening" && entry.Addr != "" {
			listening <- entry.Addr
		}
		if entry.Level == "ERROR" {
			s.mu.Lock()
			s.errLines++
			if len(s.errSample) < 3 {
				s.errSample = append(s.errSample, string(line[:min(len(line), 300)]))
			}
			s.mu.Unlock()
		}
	}
}

// stop asks the server to shut down gracefully, killing it after grace.
func (s *server) stop(grace time.Duration) error {
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case err := <-s.exit:
		s.exit <- err
		return err
	case <-time.After(grace):
		s.cmd.Process.Kill()
		return fmt.Errorf("still running %s after SIGTERM: killed", grace)
	}
}

// exited reports whether the process has ended, and how.
func (s *server) exited() (bool, error) {
	select {
	case err := <-s.exit:
		s.exit <- err
		return true, err
	default:
		return false, nil
	}
}

// rss is the server's resident set size in bytes, from /proc.
func (s *server) rss() (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc/PID/status")
}
