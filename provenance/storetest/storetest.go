// Package storetest is the conformance suite every provenance.Store passes:
// records, queries, stats, crash recovery (a real process, killed), and
// sessions. A store's test calls Run with a Harness:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Harness{
//			New:  func(t *testing.T) string { return filepath.Join(t.TempDir(), "p.db") },
//			Open: func(ctx context.Context, addr string) (provenance.Store, error) { return sqlite.Open(ctx, addr) },
//		})
//	}
package storetest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/provenance"
)

// Harness is how the suite reaches one kind of store.
type Harness struct {
	// New makes a fresh, empty database and returns its address (a path or
	// a URL), which Open takes.
	New func(t *testing.T) string
	// Open opens a Store on the database at addr; every call is another
	// owner, as another process would be.
	Open func(ctx context.Context, addr string) (provenance.Store, error)
}

// The environment of the child process the crash test kills: the database
// and the record it begins.
const (
	childAddr   = "WASMPY_STORETEST_ADDR"
	childRecord = "WASMPY_STORETEST_RECORD"
)

// Run runs the suite as subtests of t.
func Run(t *testing.T, h Harness) {
	if addr := os.Getenv(childAddr); addr != "" {
		child(h, addr) // the process testInterrupted kills
		return
	}
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, h) })
	t.Run("ListAndStats", func(t *testing.T) { testListAndStats(t, h) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, h) })
	t.Run("Interrupted", func(t *testing.T) { testInterrupted(t, h) })
	t.Run("Sessions", func(t *testing.T) { testSessions(t, h) })
	t.Run("Skills", func(t *testing.T) { testSkills(t, h) })
	t.Run("Tokens", func(t *testing.T) { testTokens(t, h) })
}

func open(t *testing.T, h Harness, addr string) provenance.Store {
	t.Helper()
	st, err := h.Open(context.Background(), addr)
	require.NoError(t, err)
	return st
}

// Record returns a running record with every field set, started at at.
func Record(kind, skill string, at time.Time) *provenance.Record {
	return &provenance.Record{ExecutionID: provenance.NewID(), Kind: kind, Skill: skill, Version: "1.0.0",
		ActorID: "alice", ActorType: "user", Caller: "token:a11ce", Tier: "sandbox", CodeHash: "c0de", InputsHash: "1a",
		Interpreter: provenance.Interpreter{Kind: "wasmpy", Version: "3.13", SHA256: "abc"},
		Packages:    []provenance.PackageSet{{Name: "sci.zip", SHA256: "5e7", Distributions: []string{"six 1.17.0"}}},
		Limits:      provenance.Limits{TimeoutMS: 1000, MemoryBytes: 1 << 20, OutputBytes: 4096, Fuel: 1e9},
		Outcome:     provenance.OutcomeRunning, StartedAt: at, HostCalls: []provenance.HostCall{}}
}

func finish(t *testing.T, st provenance.Store, r *provenance.Record, outcome string, ms float64) {
	t.Helper()
	done := r.StartedAt.Add(time.Duration(ms * float64(time.Millisecond)))
	r.Outcome, r.DurationMS, r.FinishedAt, r.OutputsHash = outcome, ms, &done, "0ut"
	r.FuelUsed, r.MemoryPeakBytes, r.HostCallsTotal = 1<<63+7, 1<<20, 1 // fuel beyond int64 is kept as the largest int64
	r.HostCalls = []provenance.HostCall{{Name: "submit_result", DurationMS: 0.1, OK: true}, {Name: "read_file", OK: false, Error: "FileNotFoundError"}}
	require.NoError(t, st.Finish(context.Background(), r))
	r.FuelUsed = 1<<63 - 1
}

func testRoundTrip(t *testing.T, h Harness) {
	ctx := context.Background()
	addr := h.New(t)
	st := open(t, h, addr)
	defer st.Close()
	at := time.Date(2025, 1, 2, 3, 4, 5, 6000, time.UTC)
	r := Record(provenance.KindSession, "", at)
	r.SessionID, r.Turn, r.StateBefore = provenance.NewID(), 3, "be4"
	require.NoError(t, st.Begin(ctx, r))
	got, err := st.Get(ctx, r.ExecutionID)
	require.NoError(t, err)
	require.Equal(t, r, got)
	require.Nil(t, got.FinishedAt)
	r.StateAfter = "af7"
	finish(t, st, r, provenance.OutcomeOK, 12.5)
	got, err = st.Get(ctx, r.ExecutionID)
	require.NoError(t, err)
	require.Equal(t, r, got)

	// Generated code: its hash and the codegen outcome are known at the end.
	g := Record(provenance.KindDef, "", at)
	g.CodeHash = ""
	require.NoError(t, st.Begin(ctx, g))
	got, err = st.Get(ctx, g.ExecutionID)
	require.NoError(t, err)
	require.Nil(t, got.Codegen)
	g.CodeHash, g.Codegen = "9e4", &provenance.Codegen{Attempts: 2, Validated: true, Cached: true, TestsPassed: 3, TestsFailed: 1}
	finish(t, st, g, provenance.OutcomeOK, 3)
	got, err = st.Get(ctx, g.ExecutionID)
	require.NoError(t, err)
	require.Equal(t, g, got)

	_, err = st.Get(ctx, provenance.NewID())
	require.ErrorIs(t, err, provenance.ErrNotFound)
	require.Error(t, st.Finish(ctx, Record(provenance.KindExec, "", at)), "finishing what never began")
	require.Error(t, st.Begin(ctx, r), "the same id twice")
	require.NoError(t, st.Ping(ctx))

	// Reopening finds the same schema and records.
	again := open(t, h, addr)
	defer again.Close()
	got, err = again.Get(ctx, r.ExecutionID)
	require.NoError(t, err)
	require.Equal(t, r, got)
}

func testListAndStats(t *testing.T, h Harness) {
	ctx := context.Background()
	st := open(t, h, h.New(t))
	defer st.Close()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var ids []string
	add := func(kind, skill, outcome string, ms float64, i int) {
		r := Record(kind, skill, t0.Add(time.Duration(i)*time.Minute))
		ids = append(ids, r.ExecutionID)
		require.NoError(t, st.Begin(ctx, r))
		if outcome != provenance.OutcomeRunning {
			finish(t, st, r, outcome, ms)
		}
	}
	for i := 1; i <= 20; i++ { // durations 1..20 ms, one in four fails
		outcome := provenance.OutcomeOK
		if i%4 == 0 {
			outcome = "exception"
		}
		add(provenance.KindSkill, "summarize", outcome, float64(i), i)
	}
	add(provenance.KindSkill, "entities", provenance.OutcomeOK, 5, 30)
	add(provenance.KindSkill, "entities", provenance.OutcomeInvalidOutput, 7, 31)
	add(provenance.KindSkill, "entities", provenance.OutcomeRunning, 0, 32)
	add(provenance.KindExec, "", provenance.OutcomeOK, 3, 33)
	add(provenance.KindSession, "", provenance.OutcomeInterrupted, 0, 34)

	list := func(f provenance.Filter) []*provenance.Record {
		t.Helper()
		recs, err := st.List(ctx, f)
		require.NoError(t, err)
		return recs
	}
	all := list(provenance.Filter{Limit: 100})
	require.Len(t, all, 25)
	require.Equal(t, provenance.KindSession, all[0].Kind, "newest first")
	require.Len(t, list(provenance.Filter{}), 25)
	sel := list(provenance.Filter{Skill: "summarize", Outcome: "exception", Limit: 2})
	require.Len(t, sel, 2)
	require.Equal(t, t0.Add(20*time.Minute), sel[0].StartedAt)
	require.Equal(t, t0.Add(16*time.Minute), sel[1].StartedAt)
	require.Len(t, list(provenance.Filter{Skill: "-"}), 2)
	require.Len(t, list(provenance.Filter{Kind: provenance.KindExec}), 1)
	require.Len(t, list(provenance.Filter{Since: t0.Add(30 * time.Minute)}), 5)
	require.Empty(t, list(provenance.Filter{ActorID: "bob"}))
	require.Empty(t, list(provenance.Filter{SessionID: "nope"}))
	byPrefix := list(provenance.Filter{IDPrefix: ids[7][:13]})
	require.NotEmpty(t, byPrefix)
	for _, r := range byPrefix {
		require.True(t, strings.HasPrefix(r.ExecutionID, ids[7][:13]))
	}
	require.Len(t, list(provenance.Filter{IDPrefix: ids[7]}), 1)
	require.Empty(t, list(provenance.Filter{IDPrefix: strings.ToUpper(ids[7])}), "ids are lowercase; a prefix matches exactly")

	stats, err := st.Stats(ctx, provenance.Filter{})
	require.NoError(t, err)
	require.Equal(t, []provenance.Stats{
		{Kind: "exec", Skill: "", Total: 1, SuccessRate: 1, P50MS: 3, P90MS: 3, P95MS: 3, P99MS: 3, Outcomes: map[string]int{"ok": 1}},
		{Kind: "session", Skill: "", Total: 1, Outcomes: map[string]int{"interrupted": 1}},
		{Kind: "skill", Skill: "entities", Total: 3, SuccessRate: 0.5, P50MS: 5, P90MS: 7, P95MS: 7, P99MS: 7,
			Outcomes: map[string]int{"ok": 1, "invalid_output": 1, "running": 1}},
		{Kind: "skill", Skill: "summarize", Total: 20, SuccessRate: 0.75, P50MS: 10, P90MS: 18, P95MS: 19, P99MS: 20,
			Outcomes: map[string]int{"ok": 15, "exception": 5}},
	}, stats)
	stats, err = st.Stats(ctx, provenance.Filter{Kind: provenance.KindSkill, Since: t0.Add(30 * time.Minute)})
	require.NoError(t, err)
	require.Len(t, stats, 1)
	require.Equal(t, 3, stats[0].Total)
}

// Many goroutines begin and finish at once: every record lands, once.
func testConcurrent(t *testing.T, h Harness) {
	ctx := context.Background()
	addr := h.New(t)
	a, b := open(t, h, addr), open(t, h, addr)
	defer a.Close()
	defer b.Close()
	const n = 64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := a
			if i%2 == 1 {
				st = b
			}
			r := Record(provenance.KindExec, "", time.Now().UTC().Truncate(time.Microsecond))
			if err := st.Begin(ctx, r); err != nil {
				errs <- err
				return
			}
			done := time.Now().UTC().Truncate(time.Microsecond)
			r.Outcome, r.FinishedAt = provenance.OutcomeOK, &done
			errs <- st.Finish(ctx, r)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	recs, err := a.List(ctx, provenance.Filter{Limit: 2 * n})
	require.NoError(t, err)
	require.Len(t, recs, n)
	seen := map[string]bool{}
	for _, r := range recs {
		require.False(t, seen[r.ExecutionID])
		seen[r.ExecutionID] = true
		require.Equal(t, provenance.OutcomeOK, r.Outcome)
	}
}

// child is the process testInterrupted kills: it opens a store, begins a
// record, says so, and waits to be killed.
func child(h Harness, addr string) {
	st, err := h.Open(context.Background(), addr)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	r := Record(provenance.KindSkill, "spin", time.Now().UTC().Truncate(time.Microsecond))
	r.ExecutionID = os.Getenv(childRecord)
	if err := st.Begin(context.Background(), r); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	time.Sleep(time.Hour)
}

// A record left running by a process that was killed is marked interrupted
// when a store next recovers; one left running by a live store is not.
func testInterrupted(t *testing.T, h Harness) {
	ctx := context.Background()
	addr := h.New(t)
	live := open(t, h, addr)
	running := Record(provenance.KindSkill, "spin", time.Now().UTC().Truncate(time.Microsecond))
	require.NoError(t, live.Begin(ctx, running))

	other := open(t, h, addr) // another store while the first is alive
	n, err := other.Recover(ctx)
	require.NoError(t, err)
	require.Equal(t, 0, n)
	got, err := other.Get(ctx, running.ExecutionID)
	require.NoError(t, err)
	require.Equal(t, provenance.OutcomeRunning, got.Outcome)
	require.NoError(t, other.Close())

	// A real process begins a record and is killed.
	orphan := provenance.NewID()
	cmd := exec.Command(os.Args[0], "-test.run", runPattern(t.Name()), "-test.count=1")
	cmd.Env = append(os.Environ(), childAddr+"="+addr, childRecord+"="+orphan)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the child process did not begin its record: %q %v", line, err)
	}
	require.NoError(t, cmd.Process.Kill())
	var exit *exec.ExitError
	require.True(t, errors.As(cmd.Wait(), &exit), "killed")

	got, err = live.Get(ctx, orphan)
	require.NoError(t, err)
	require.Equal(t, provenance.OutcomeRunning, got.Outcome, "nobody has recovered yet")
	n, err = live.Recover(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	got, err = live.Get(ctx, orphan)
	require.NoError(t, err)
	require.Equal(t, provenance.OutcomeInterrupted, got.Outcome)
	require.Contains(t, got.Error, "ended before the run finished")
	require.Nil(t, got.FinishedAt)
	got, err = live.Get(ctx, running.ExecutionID)
	require.NoError(t, err)
	require.Equal(t, provenance.OutcomeRunning, got.Outcome, "its store is still open")

	// Closing a store leaves nothing running behind it.
	reopened := open(t, h, addr)
	defer reopened.Close()
	require.NoError(t, live.Close())
	got, err = reopened.Get(ctx, running.ExecutionID)
	require.NoError(t, err)
	require.Equal(t, provenance.OutcomeInterrupted, got.Outcome)
}

// runPattern is a -test.run pattern that selects exactly the test name.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + p + "$"
	}
	return strings.Join(parts, "/")
}

func testSessions(t *testing.T, h Harness) {
	ctx := context.Background()
	addr := h.New(t)
	a, b := open(t, h, addr), open(t, h, addr) // two replicas
	defer a.Close()
	defer b.Close()

	s := &provenance.Session{ID: provenance.NewID(), Owner: "team-a", Tier: "testing", State: []byte("state 0"), StateHash: "h0"}
	require.NoError(t, a.CreateSession(ctx, s))
	require.Equal(t, "h0", s.StateHash, "kept as given")
	require.Equal(t, int64(7), s.Size)
	require.False(t, s.CreatedAt.IsZero())
	require.ErrorIs(t, b.CreateSession(ctx, &provenance.Session{ID: s.ID, Owner: "team-b"}), provenance.ErrExists)

	got, err := b.GetSession(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, s, got)

	// A turn on b, then a turn on a that started from the same state loses.
	big := make([]byte, 3<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	next := *got
	next.Turn, next.State, next.StateHash = 1, big, "h1"
	require.NoError(t, b.UpdateSession(ctx, &next, 0))
	stale := *s
	stale.Turn, stale.State = 1, []byte("lost")
	require.ErrorIs(t, a.UpdateSession(ctx, &stale, 0), provenance.ErrConflict)
	got, err = a.GetSession(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, 1, got.Turn)
	require.Equal(t, "testing", got.Tier, "a session keeps its tier")
	require.Equal(t, big, got.State)
	require.Equal(t, "h1", got.StateHash)
	require.False(t, got.UpdatedAt.Before(got.CreatedAt))

	// Deltas after the state: appended in turn order, a stale one loses, and
	// a new state drops them.
	d2 := &provenance.Session{ID: s.ID, Turn: 2, StateHash: "h2"}
	require.NoError(t, a.AppendSession(ctx, d2, []byte("delta 2"), 1))
	require.Equal(t, int64(len(big)+7), d2.Size)
	require.ErrorIs(t, b.AppendSession(ctx, &provenance.Session{ID: s.ID, Turn: 2, StateHash: "x"}, []byte("lost"), 1), provenance.ErrConflict)
	require.NoError(t, b.AppendSession(ctx, &provenance.Session{ID: s.ID, Turn: 3, StateHash: "h3"}, []byte("delta three"), 2))
	require.Error(t, b.AppendSession(ctx, &provenance.Session{ID: s.ID, Turn: 3}, []byte("x"), 3), "a delta moves the turn on")
	got, err = b.GetSession(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, big, got.State)
	require.Equal(t, [][]byte{[]byte("delta 2"), []byte("delta three")}, got.Deltas)
	require.Equal(t, 3, got.Turn)
	require.Equal(t, "h3", got.StateHash)
	require.Equal(t, int64(len(big)+7+11), got.Size)
	after, err := a.SessionDeltas(ctx, s.ID, 2)
	require.NoError(t, err)
	require.Equal(t, [][]byte{[]byte("delta three")}, after)
	after, err = a.SessionDeltas(ctx, s.ID, 3)
	require.NoError(t, err)
	require.Empty(t, after)
	stat, err := a.StatSession(ctx, s.ID)
	require.NoError(t, err)
	require.Nil(t, stat.State)
	require.Nil(t, stat.Deltas)
	got.State, got.Deltas = nil, nil
	require.Equal(t, got, stat)
	compact := &provenance.Session{ID: s.ID, Owner: s.Owner, Turn: 4, State: big, StateHash: "h4", CreatedAt: s.CreatedAt}
	require.NoError(t, a.UpdateSession(ctx, compact, 3))
	got, err = b.GetSession(ctx, s.ID)
	require.NoError(t, err)
	require.Nil(t, got.Deltas, "a new state drops the deltas")
	require.Equal(t, int64(len(big)), got.Size)
	next = *got

	later := got.UpdatedAt.Add(time.Second)
	empty := &provenance.Session{ID: provenance.NewID(), Owner: "team-b", CreatedAt: later, UpdatedAt: later}
	require.NoError(t, a.CreateSession(ctx, empty))
	got, err = b.GetSession(ctx, empty.ID)
	require.NoError(t, err)
	require.Equal(t, []byte{}, got.State)

	list, err := b.ListSessions(ctx, provenance.SessionFilter{Owner: "team-a"})
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, s.ID, list[0].ID)
	require.Nil(t, list[0].State, "listing leaves the states out")
	require.Equal(t, int64(len(big)), list[0].Size)
	all, err := b.ListSessions(ctx, provenance.SessionFilter{})
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Equal(t, empty.ID, all[0].ID, "most recently updated first")
	idle, err := b.ListSessions(ctx, provenance.SessionFilter{UpdatedBefore: empty.UpdatedAt})
	require.NoError(t, err)
	require.Len(t, idle, 1)
	require.Equal(t, s.ID, idle[0].ID)

	require.NoError(t, a.AppendSession(ctx, &provenance.Session{ID: s.ID, Turn: 5, StateHash: "h5"}, []byte("delta 5"), 4))
	require.NoError(t, a.DeleteSession(ctx, s.ID))
	require.ErrorIs(t, b.DeleteSession(ctx, s.ID), provenance.ErrNotFound)
	_, err = b.GetSession(ctx, s.ID)
	require.ErrorIs(t, err, provenance.ErrNotFound)
	_, err = b.StatSession(ctx, s.ID)
	require.ErrorIs(t, err, provenance.ErrNotFound)
	require.ErrorIs(t, b.UpdateSession(ctx, &next, 4), provenance.ErrNotFound)
	require.ErrorIs(t, b.AppendSession(ctx, &provenance.Session{ID: s.ID, Turn: 6}, []byte("x"), 5), provenance.ErrNotFound)
	// Its deltas went with it.
	require.NoError(t, a.CreateSession(ctx, &provenance.Session{ID: s.ID, Owner: "team-a", State: []byte("again")}))
	got, err = b.GetSession(ctx, s.ID)
	require.NoError(t, err)
	require.Nil(t, got.Deltas)
}

// Skill versions registered on one replica are seen by another, registered
// once, disabled, enabled and deleted.
func testSkills(t *testing.T, h Harness) {
	ctx := context.Background()
	addr := h.New(t)
	a, b := open(t, h, addr), open(t, h, addr)
	defer a.Close()
	defer b.Close()
	files := map[string][]byte{"skill.yaml": []byte("name: echo\nversion: 1.0.0\n"), "schema.json": []byte(`{"input": {}, "output": {}}`),
		"handler.py": {0xff, 'x', 0}} // any bytes
	v1 := &provenance.RegisteredSkill{Name: "echo", Version: "1.0.0", Files: files, RegisteredBy: "admin"}
	require.NoError(t, a.RegisterSkill(ctx, v1))
	require.False(t, v1.RegisteredAt.IsZero())
	require.ErrorIs(t, b.RegisterSkill(ctx, &provenance.RegisteredSkill{Name: "echo", Version: "1.0.0", Files: map[string][]byte{}}),
		provenance.ErrExists, "never overwritten")
	v2 := &provenance.RegisteredSkill{Name: "echo", Version: "2.0.0", Files: map[string][]byte{"handler.py": []byte("def f(): pass")},
		RegisteredBy: "admin", RegisteredAt: v1.RegisteredAt.Add(time.Second)}
	require.NoError(t, b.RegisterSkill(ctx, v2))
	other := &provenance.RegisteredSkill{Name: "alpha", Version: "0.1.0", Files: map[string][]byte{}, RegisteredBy: "ops"}
	require.NoError(t, a.RegisterSkill(ctx, other))

	got, err := b.RegisteredSkills(ctx)
	require.NoError(t, err)
	require.Equal(t, []*provenance.RegisteredSkill{other, v1, v2}, got)

	require.Equal(t, provenance.HashFiles(files), v1.Hash)
	require.NotEqual(t, v1.Hash, v2.Hash)

	require.NoError(t, b.SetSkillDisabled(ctx, "echo", "1.0.0", true, "ops"))
	got, err = a.RegisteredSkills(ctx)
	require.NoError(t, err)
	require.True(t, got[1].Disabled)
	require.False(t, got[2].Disabled)
	hash, disabled, err := a.SkillState(ctx, "echo", "1.0.0")
	require.NoError(t, err)
	require.True(t, disabled)
	require.Equal(t, v1.Hash, hash)
	require.NoError(t, a.SetSkillDisabled(ctx, "echo", "1.0.0", false, "admin"))
	_, disabled, err = b.SkillState(ctx, "echo", "1.0.0")
	require.NoError(t, err)
	require.False(t, disabled)
	require.ErrorIs(t, a.SetSkillDisabled(ctx, "echo", "9.9.9", true, "admin"), provenance.ErrNotFound)

	require.NoError(t, a.DeleteSkill(ctx, "echo", "1.0.0", "ops"))
	require.ErrorIs(t, b.DeleteSkill(ctx, "echo", "1.0.0", "ops"), provenance.ErrNotFound)
	_, _, err = b.SkillState(ctx, "echo", "1.0.0")
	require.ErrorIs(t, err, provenance.ErrNotFound)
	got, err = b.RegisteredSkills(ctx)
	require.NoError(t, err)
	require.Equal(t, []*provenance.RegisteredSkill{other, v2}, got)

	// Every change is on the audit trail, newest first, with the version's
	// hash; refused changes (a second registration, an unknown version) are not.
	trail, err := b.SkillAudit(ctx, provenance.AuditFilter{Skill: "echo"})
	require.NoError(t, err)
	type step struct{ actor, action, version, hash string }
	var steps []step
	for _, e := range trail {
		require.False(t, e.At.IsZero())
		steps = append(steps, step{e.Actor, e.Action, e.Version, e.Hash})
	}
	require.Equal(t, []step{
		{"ops", provenance.ActionDelete, "1.0.0", v1.Hash},
		{"admin", provenance.ActionEnable, "1.0.0", v1.Hash},
		{"ops", provenance.ActionDisable, "1.0.0", v1.Hash},
		{"admin", provenance.ActionRegister, "2.0.0", v2.Hash},
		{"admin", provenance.ActionRegister, "1.0.0", v1.Hash},
	}, steps)
	all, err := a.SkillAudit(ctx, provenance.AuditFilter{Limit: 2})
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Equal(t, provenance.ActionDelete, all[0].Action)
	all, err = a.SkillAudit(ctx, provenance.AuditFilter{})
	require.NoError(t, err)
	require.Len(t, all, 6, "alpha's registration too")
	require.NoError(t, a.RegisterSkill(ctx, v1), "a deleted version may be registered again")
}

// Tokens are kept by name and found by hash; a name or hash is used once.
func testTokens(t *testing.T, h Harness) {
	ctx := context.Background()
	addr := h.New(t)
	a, b := open(t, h, addr), open(t, h, addr)
	defer a.Close()
	defer b.Close()
	admin := &provenance.Token{Name: "ops", Hash: provenance.HashBytes([]byte("s3cret")), Role: provenance.RoleAdmin, MaxTier: "trusted"}
	require.NoError(t, a.CreateToken(ctx, admin))
	require.False(t, admin.CreatedAt.IsZero())
	user := &provenance.Token{Name: "agent", Hash: provenance.HashBytes([]byte("other")), Role: provenance.RoleRunner}
	require.NoError(t, a.CreateToken(ctx, user))
	require.ErrorIs(t, b.CreateToken(ctx, &provenance.Token{Name: "ops", Hash: "x", Role: provenance.RoleRunner}), provenance.ErrExists)
	require.ErrorIs(t, b.CreateToken(ctx, &provenance.Token{Name: "new", Hash: admin.Hash, Role: provenance.RoleRunner}), provenance.ErrExists)

	got, err := b.TokenByHash(ctx, provenance.HashBytes([]byte("s3cret")))
	require.NoError(t, err)
	require.Equal(t, admin, got)
	_, err = b.TokenByHash(ctx, provenance.HashBytes([]byte("guess")))
	require.ErrorIs(t, err, provenance.ErrNotFound)
	all, err := b.ListTokens(ctx)
	require.NoError(t, err)
	require.Equal(t, []*provenance.Token{user, admin}, all)

	require.NoError(t, b.DeleteToken(ctx, "ops"))
	require.ErrorIs(t, a.DeleteToken(ctx, "ops"), provenance.ErrNotFound)
	_, err = a.TokenByHash(ctx, admin.Hash)
	require.ErrorIs(t, err, provenance.ErrNotFound)
}
