package runs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/internal/units"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/skills"
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

// overBudget says why c may not add to what u counts (mine, for c's own
// budget; all, for the service's), or "" if it may: mineText and allText
// describe the usage, given its amount and the budget.
func overBudget(u usage, c Caller, global, perCaller int64, mineText, allText func(n, budget int64) string) (mine, all string) {
	if key := budgetKey(c.sessionOwner()); key != "" && perCaller >= 0 && u.by[key] >= perCaller {
		mine = mineText(u.by[key], perCaller) + ": close a session (DELETE /sessions/{id}, MCP session_close) or wait for one to expire"
	}
	if global >= 0 && u.total >= global {
		all = allText(u.total, global) + ": retry later"
	}
	return mine, all
}

// approx writes a size for a message, as 16.9MiB.
func approx(n int64) string {
	if n < 1<<20 {
		return units.FormatSize(uint64(n))
	}
	return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
}

func sizeText(what string) func(n, budget int64) string {
	return func(n, budget int64) string {
		return fmt.Sprintf(what, approx(n), units.FormatSize(uint64(budget)))
	}
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
			return fmt.Errorf("runs: listing sessions: %w", err)
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
	var whys []string // the caller's own budgets first, then the service's
	mine, all := overBudget(mem, c, b.Memory, b.MemoryPerCaller,
		sizeText("this caller's sessions hold %s of memory, at its budget of %s"),
		sizeText("the service's sessions hold %s of memory, at its budget of %s"))
	whys = append(whys, mine, all)
	if e.cfg.Sessions != nil {
		mine, all := overBudget(store, c, b.Store, b.StorePerCaller,
			sizeText("this caller's sessions take %s of the session store, at its budget of %s"),
			sizeText("the service's sessions take %s of the session store, at its budget of %s"))
		whys = slices.Insert(whys, 1, mine)
		whys = append(whys, all)
	}
	if opening {
		mine, _ := overBudget(count, c, -1, int64(b.SessionsPerCaller),
			func(n, budget int64) string {
				return fmt.Sprintf("this caller has %d sessions open, its budget of %d", n, budget)
			}, nil)
		whys = slices.Insert(whys, 0, mine)
	}
	why := ""
	for _, w := range whys {
		if w != "" {
			why = w
			break
		}
	}
	if why != "" {
		return &skills.Error{Code: CodeBudgetExceeded, Message: why}
	}
	return nil
}
