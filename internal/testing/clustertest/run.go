//go:build linux

package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/wasmpy/wasmpy/internal/testing/pgtest"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/provenance/postgres"
)

type config struct {
	wasmpy, haproxy, out string
	duration             time.Duration
	concurrency          int
}

func run(ctx context.Context, cfg config) (err error) {
	bin, err := filepath.Abs(cfg.wasmpy)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%w (make builds it)", err)
	}
	haproxy, err := haproxyBinary(cfg.haproxy)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "wasmpy-cluster-")
	if err != nil {
		return err
	}
	defer func() {
		if err == nil {
			os.RemoveAll(dir)
		} else {
			err = fmt.Errorf("%w (logs in %s)", err, dir)
		}
	}()

	pg, err := pgtest.Start(ctx)
	if err != nil {
		return err
	}
	defer pg.Stop()
	db, err := pg.CreateDatabase(ctx)
	if err != nil {
		return err
	}
	fmt.Println("cluster-test: PostgreSQL up;", db)

	replicas := make([]*replica, 3)
	for i := range replicas {
		addr, err := freePort()
		if err != nil {
			return err
		}
		replicas[i] = &replica{name: fmt.Sprintf("r%d", i), addr: addr, db: db, bin: bin,
			log: filepath.Join(dir, fmt.Sprintf("r%d.log", i))}
	}
	defer func() {
		for _, r := range replicas {
			if serr := r.stop(); serr != nil && err == nil {
				err = serr
			}
		}
	}()
	lbAddr, err := freePort()
	if err != nil {
		return err
	}
	statsAddr, err := freePort()
	if err != nil {
		return err
	}
	lb := &balancer{bin: haproxy, dir: dir, addr: lbAddr, stats: statsAddr}
	defer lb.stop()
	base := "http://" + lbAddr

	var all []answer
	var figs []figures
	ss := newSessions(cfg.concurrency)
	phase := func(name, base string, n int, d time.Duration, during func(context.Context) error) error {
		pctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		errc := make(chan error, 1)
		go func() {
			if during == nil {
				errc <- nil
				return
			}
			errc <- during(pctx)
		}()
		start := time.Now()
		as, lerr := load(pctx, base, ss)
		elapsed := time.Since(start)
		if err := <-errc; err != nil {
			return err
		}
		if lerr != nil {
			return fmt.Errorf("%s: %w", name, lerr)
		}
		f := summarise(name, n, elapsed, as)
		fmt.Println("cluster-test:", f)
		figs, all = append(figs, f), append(all, as...)
		return judgePhase(f, as, during != nil)
	}

	// One replica without the balancer (the yardstick), one behind it, then
	// three, under the same load.
	if err := replicas[0].start(ctx); err != nil {
		return err
	}
	if err := phase("direct", "http://"+replicas[0].addr, 1, cfg.duration, nil); err != nil {
		return err
	}
	if err := lb.start(ctx, replicas[:1]); err != nil {
		return err
	}
	if err := phase("1 replica", base, 1, cfg.duration, nil); err != nil {
		return err
	}
	for _, r := range replicas[1:] {
		if err := r.start(ctx); err != nil {
			return err
		}
	}
	if err := lb.start(ctx, replicas); err != nil {
		return err
	}
	if err := phase("3 replicas", base, 3, cfg.duration, nil); err != nil {
		return err
	}

	// Three replicas, one killed a third of the way in and started again.
	victim := replicas[1]
	var inFlight []string
	var killedOwner string
	err = phase("kill", base, 3, 2*cfg.duration, func(ctx context.Context) error {
		select {
		case <-time.After(2 * cfg.duration / 3):
		case <-ctx.Done():
			return errors.New("the load ended before the kill")
		}
		var err error
		if killedOwner, inFlight, err = freezeWithRunsInFlight(ctx, db, victim); err != nil {
			return err
		}
		victim.cmd.Process.Signal(syscall.SIGKILL)
		<-victim.done
		victim.cmd = nil
		fmt.Printf("cluster-test: killed %s with %d runs in flight; starting it again\n", victim.name, len(inFlight))
		if err := victim.start(ctx); err != nil {
			return fmt.Errorf("restarting %s: %w", victim.name, err)
		}
		return lb.waitUp(ctx, len(replicas))
	})
	if err != nil {
		return err
	}
	final, err := ss.finalTurns(ctx, base)
	all = append(all, final...)
	if err != nil {
		return err
	}
	for _, r := range replicas {
		fmt.Printf("cluster-test: %s peak RSS %s\n", r.name, peakRSS(r.cmd.Process.Pid))
		if err := r.stop(); err != nil {
			return fmt.Errorf("stopping %s: %w", r.name, err)
		}
	}
	if err := check(ctx, db, all, ss, killedOwner, inFlight); err != nil {
		return err
	}
	if cfg.out != "" {
		b, _ := json.MarshalIndent(figs, "", "  ")
		return os.WriteFile(cfg.out, append(b, '\n'), 0o644)
	}
	return nil
}

// judgePhase fails a phase in which a replica took traffic before it was
// ready, or, unless a replica was made to fail in it (failing), one whose
// answers were not all 2xx: a 5xx, a 4xx, or none.
func judgePhase(f figures, as []answer, failing bool) error {
	for _, a := range as {
		if strings.Contains(a.err, `"code":"loading"`) {
			return fmt.Errorf("%s: a replica took traffic before it was ready: %s", f.Phase, a.err)
		}
	}
	if !failing && len(f.Errors) > 0 {
		return fmt.Errorf("%s: errors without any replica failing: %v", f.Phase, f.Errors)
	}
	return nil
}

// peakRSS is a process's peak resident set (VmHWM), for sizing.
func peakRSS(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// freezeWithRunsInFlight stops (SIGSTOP) the replica at a moment when it
// has runs begun and not finished, and returns its owner id and those runs:
// frozen, it can finish none of them before it is killed. It tries for up
// to a minute, letting the replica go on between tries.
func freezeWithRunsInFlight(ctx context.Context, url string, r *replica) (string, []string, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return "", nil, err
	}
	defer db.Close()
	pid := r.cmd.Process.Pid
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		r.cmd.Process.Signal(syscall.SIGSTOP)
		var owner string
		var ids []string
		rows, err := db.QueryContext(ctx, `SELECT o.id, e.execution_id FROM executions e JOIN owners o ON e.owner = o.id
			WHERE o.pid = $1 AND e.outcome = 'running'`, pid)
		if err != nil {
			return "", nil, err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&owner, &id); err != nil {
				rows.Close()
				return "", nil, err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if len(ids) > 0 {
			return owner, ids, nil
		}
		r.cmd.Process.Signal(syscall.SIGCONT)
		time.Sleep(20 * time.Millisecond)
	}
	return "", nil, fmt.Errorf("%s never had a run in flight", r.name)
}

// check opens the store once every replica has stopped: every 2xx answer
// has its record, finished and ok; no run was recorded twice or without a
// request; the killed replica's runs in flight are interrupted; nothing is
// left running.
func check(ctx context.Context, url string, all []answer, ss *sessions, killedOwner string, inFlight []string) error {
	st, err := postgres.Open(ctx, url)
	if err != nil {
		return err
	}
	defer st.Close()
	seen := map[string]bool{}
	ok := 0
	for _, a := range all {
		if a.status < 200 || a.status >= 300 || a.class == "session-new" { // a session opened runs nothing
			continue
		}
		ok++
		if a.executionID == "" {
			return fmt.Errorf("a %d answer to %s has no X-Execution-Id", a.status, a.class)
		}
		if seen[a.executionID] {
			return fmt.Errorf("execution %s answered twice", a.executionID)
		}
		seen[a.executionID] = true
		rec, err := st.Get(ctx, a.executionID)
		if err != nil {
			return fmt.Errorf("the 2xx answer %s has no record: %w", a.executionID, err)
		}
		if rec.Outcome != provenance.OutcomeOK || rec.FinishedAt == nil {
			return fmt.Errorf("the 2xx answer %s is recorded %s, finished %v", a.executionID, rec.Outcome, rec.FinishedAt != nil)
		}
	}
	stats, err := st.Stats(ctx, provenance.Filter{})
	if err != nil {
		return err
	}
	total, byOutcome := 0, map[string]int{}
	for _, s := range stats {
		total += s.Total
		for o, n := range s.Outcomes {
			byOutcome[o] += n
		}
	}
	if total > len(all) {
		return fmt.Errorf("%d records for %d requests: some run was recorded twice (a retried POST?)", total, len(all))
	}
	if byOutcome[provenance.OutcomeRunning] > 0 {
		return fmt.Errorf("%d records left running after every replica stopped", byOutcome[provenance.OutcomeRunning])
	}
	for _, id := range inFlight {
		rec, err := st.Get(ctx, id)
		if err != nil {
			return err
		}
		if rec.Outcome != provenance.OutcomeInterrupted {
			return fmt.Errorf("the killed replica's run %s is %s, not interrupted", id, rec.Outcome)
		}
	}
	// A run may begin just as the replica is frozen (its INSERT already on
	// the wire), so it can have more runs interrupted than were seen in
	// flight; what must never be is an interrupted run of another owner.
	if err := onlyOwnerInterrupted(ctx, url, killedOwner); err != nil {
		return err
	}
	turns, err := ss.check(ctx, st)
	if err != nil {
		return err
	}
	fmt.Printf("cluster-test: store checked: %d answers 2xx, each with its record; %d records for %d requests; %d interrupted (%d seen in flight), all the killed replica's (owner %s); %d sessions, %d turns kept, each recorded once, each from the state the turn before left\n",
		ok, total, len(all), byOutcome[provenance.OutcomeInterrupted], len(inFlight), killedOwner, len(ss.byID), turns)
	return nil
}

// onlyOwnerInterrupted fails if a run of any owner but owner (the killed
// replica) is recorded interrupted: a live replica's runs were touched.
func onlyOwnerInterrupted(ctx context.Context, url, owner string) error {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return err
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM executions WHERE outcome = 'interrupted' AND owner <> $1`, owner).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("%d runs of live replicas recorded interrupted", n)
	}
	return nil
}
