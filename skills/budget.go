package skills

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/internal/units"
	"github.com/wasmpy/wasmpy/provenance"
)

// CodeBudgetExceeded refuses a session (opening, forking or a turn) or an
// MCP session or workspace write while the caller, or everyone together,
// holds a budget's worth (429).
const CodeBudgetExceeded = "budget_exceeded"

// SessionBudgets bound what sessions hold, all callers together and per
// caller (Caller.Owner: a token; a service that asks for no token has one
// caller, and the per-caller budgets do not apply). While a caller, or everyone, is at a
// budget, opening or forking a session and taking a turn are refused
// (budget_exceeded) until sessions close or expire. A budget is checked
// before the step, so a turn may pass it by what the turn adds, at most
// the sandbox's SessionLimits.MaxStateBytes (once per turn running at
// the same time).
//
// A zero field means its default (DefaultSessionBudgets); a negative one,
// no bound.
type SessionBudgets struct {
	// SessionsPerCaller bounds the sessions a caller keeps open (the
	// sandbox's SessionLimits.Max bounds them all).
	SessionsPerCaller int
	// Memory and MemoryPerCaller bound the state of the sessions open in
	// this process, counted as SessionLimits.MaxStateBytes counts it (the
	// pages that differ from the interpreter's image, and the workspace
	// overlay); the process holds somewhat more for each.
	Memory, MemoryPerCaller int64
	// Store and StorePerCaller bound what the session store keeps of the
	// sessions (compressed: a whole save and the deltas after it).
	Store, StorePerCaller int64
}

// DefaultSessionBudgets are the budgets where ExecutorConfig.Budgets sets
// none.
func DefaultSessionBudgets() SessionBudgets {
	return SessionBudgets{SessionsPerCaller: 20, Memory: 2 << 30, MemoryPerCaller: 512 << 20, Store: 4 << 30, StorePerCaller: 1 << 30}
}

func (b SessionBudgets) or(d SessionBudgets) SessionBudgets {
	pick := func(v, d int64) int64 {
		if v == 0 {
			return d
		}
		return v
	}
	b.SessionsPerCaller = int(pick(int64(b.SessionsPerCaller), int64(d.SessionsPerCaller)))
	b.Memory, b.MemoryPerCaller = pick(b.Memory, d.Memory), pick(b.MemoryPerCaller, d.MemoryPerCaller)
	b.Store, b.StorePerCaller = pick(b.Store, d.Store), pick(b.StorePerCaller, d.StorePerCaller)
	return b
}

// budgetKey is whose budget a session of owner (Caller.sessionOwner)
// counts against: the caller's Owner, without its Scope.
func budgetKey(owner string) string {
	key, _, _ := strings.Cut(owner, "/")
	return key
}

// usage is what sessions hold, in all and by budget key.
type usage struct {
	total int64
	by    map[string]int64
}

func (u *usage) add(key string, n int64) {
	if u.by == nil {
		u.by = map[string]int64{}
	}
	u.total += n
	u.by[key] += n
}

// overBudget says why c may not add to what u counts, or "" if it may.
func overBudget(what string, u usage, c Caller, global, perCaller int64, size bool) string {
	show := func(n int64) string {
		if size {
			return units.FormatSize(uint64(n))
		}
		return fmt.Sprint(n)
	}
	key := budgetKey(c.sessionOwner())
	mine := u.by[key]
	switch {
	case key != "" && perCaller >= 0 && mine >= perCaller:
		return fmt.Sprintf("this caller's %s hold %s, its budget of %s: close a session (DELETE /sessions/{id}, session_close) or wait for one to expire",
			what, show(mine), show(perCaller))
	case global >= 0 && u.total >= global:
		return fmt.Sprintf("the service's %s hold %s, its budget of %s: retry later", what, show(u.total), show(global))
	}
	return ""
}

// withinBudgets refuses (budget_exceeded) a step of c's that adds to what
// sessions hold while c, or everyone, is at a budget; opening says the
// step opens a session (a new one or a fork), which counts too.
func (e *Executor) withinBudgets(ctx context.Context, c Caller, opening bool) error {
	b := e.cfg.Budgets.or(DefaultSessionBudgets())
	var mem, count usage
	e.sessions.mu.Lock()
	open := make([]*live, 0, len(e.sessions.open))
	for _, l := range e.sessions.open {
		open = append(open, l)
	}
	e.sessions.mu.Unlock()
	for _, l := range open {
		if l.mu.TryLock() { // between turns: see whether it expired, and its size now
			in, err := l.sess.Info()
			l.mu.Unlock()
			if err != nil { // expired in the sandbox: it holds nothing
				continue
			}
			l.bytes.Store(in.StateBytes)
		}
		key := budgetKey(l.owner)
		mem.add(key, l.bytes.Load())
		count.add(key, 1)
	}
	var store usage
	if e.cfg.Sessions != nil {
		all, err := e.cfg.Sessions.ListSessions(ctx, provenance.SessionFilter{})
		if err != nil {
			return fmt.Errorf("skills: listing sessions: %w", err)
		}
		count = usage{} // the store knows every session, this process's and others'
		idle := time.Now().Add(-e.cfg.Sandbox.Sessions.Or(wasmpy.DefaultSessionLimits()).IdleTTL)
		for _, s := range all {
			if s.UpdatedAt.Before(idle) { // expired: the next session opened deletes it
				continue
			}
			store.add(budgetKey(s.Owner), s.Size)
			count.add(budgetKey(s.Owner), 1)
		}
	}
	why := overBudget("session memory", mem, c, b.Memory, b.MemoryPerCaller, true)
	if why == "" && e.cfg.Sessions != nil {
		why = overBudget("sessions in the store", store, c, b.Store, b.StorePerCaller, true)
	}
	if why == "" && opening {
		why = overBudget("sessions", count, c, -1, int64(b.SessionsPerCaller), false)
	}
	if why != "" {
		return &Error{Code: CodeBudgetExceeded, Message: why}
	}
	return nil
}
