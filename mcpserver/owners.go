package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/wasmpy/wasmpy/internal/units"
	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/skills"
)

// Budgets bound MCP over HTTP: the sessions clients keep open and the
// workspaces they fill, in all and per caller (the token that opened
// them; a service that asks for no token has one caller, and the
// per-caller budgets do not apply). A zero field means its default
// (DefaultBudgets); a negative one, no bound.
type Budgets struct {
	// Sessions and SessionsPerCaller bound the MCP sessions open at once;
	// past one, a new session (initialize) is refused with 429
	// budget_exceeded until one ends (DELETE, or SessionTimeout idle).
	Sessions, SessionsPerCaller int
	// Workspaces and WorkspacesPerCaller bound the bytes the sessions'
	// workspaces hold together (each is also bounded by
	// Config.Workspace); a write past one fails (budget_exceeded).
	Workspaces, WorkspacesPerCaller int64
}

// DefaultBudgets are the budgets where Config.Budgets sets none.
func DefaultBudgets() Budgets {
	return Budgets{Sessions: 100, SessionsPerCaller: 10, Workspaces: 2 << 30, WorkspacesPerCaller: 256 << 20}
}

func (b Budgets) or(d Budgets) Budgets {
	if b.Sessions == 0 {
		b.Sessions = d.Sessions
	}
	if b.SessionsPerCaller == 0 {
		b.SessionsPerCaller = d.SessionsPerCaller
	}
	if b.Workspaces == 0 {
		b.Workspaces = d.Workspaces
	}
	if b.WorkspacesPerCaller == 0 {
		b.WorkspacesPerCaller = d.WorkspacesPerCaller
	}
	return b
}

// httpSessions are the MCP sessions over HTTP: each bound to the caller
// that opened it, and counted against the ceilings.
type httpSessions struct {
	mu      sync.Mutex
	callers map[string]runs.Caller // by Mcp-Session-Id
	pending map[string]int         // initializes under way, by Caller.Owner
}

const sessionIDHeader = "Mcp-Session-Id"

// callerOf is the caller an MCP session belongs to: over HTTP, the one
// that opened it; over stdio (no session id), the zero Caller, the local
// user. An HTTP session never bound is refused: its caller is unknown.
func (h *httpSessions) callerOf(id string) (runs.Caller, error) {
	if id == "" {
		return runs.Caller{}, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.callers[id]
	if !ok {
		return runs.Caller{}, errors.New("mcpserver: an MCP session over HTTP not opened through Server.Handler")
	}
	return c, nil
}

// serveHTTP checks a request against the MCP session it names (another
// caller's is not found), or, when it names none and may open one, against
// the ceilings; then h serves it, and a session it opens is bound to the
// caller.
func (s *Server) serveHTTP(h http.Handler, w http.ResponseWriter, r *http.Request) {
	c := runs.CallerFrom(r.Context())
	if id := r.Header.Get(sessionIDHeader); id != "" {
		s.http.mu.Lock()
		owner, ok := s.http.callers[id]
		s.http.mu.Unlock()
		if ok && owner.Owner != c.Owner {
			httpError(w, http.StatusNotFound, "unknown_session", fmt.Sprintf("no MCP session %q", id))
			return
		}
		h.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodPost {
		h.ServeHTTP(w, r)
		return
	}
	if why := s.reserveSession(c.Owner); why != "" {
		httpError(w, http.StatusTooManyRequests, runs.CodeBudgetExceeded, why)
		return
	}
	bw := &bindingWriter{ResponseWriter: w, bind: func(id string) {
		s.http.mu.Lock()
		s.http.callers[id] = c
		s.http.mu.Unlock()
	}}
	defer func() {
		s.http.mu.Lock()
		if s.http.pending[c.Owner]--; s.http.pending[c.Owner] <= 0 {
			delete(s.http.pending, c.Owner)
		}
		s.http.mu.Unlock()
	}()
	h.ServeHTTP(bw, r)
}

// reserveSession counts an initialize of owner's against the ceilings
// (forgetting the sessions that ended), or says why it may not open one.
func (s *Server) reserveSession(owner string) string {
	live := map[string]bool{}
	for ss := range s.mcp.Sessions() {
		live[ss.ID()] = true
	}
	h := &s.http
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.callers == nil {
		h.callers, h.pending = map[string]runs.Caller{}, map[string]int{}
	}
	all, mine := 0, h.pending[owner]
	for id, c := range h.callers {
		if !live[id] {
			delete(h.callers, id)
			continue
		}
		all++
		if c.Owner == owner {
			mine++
		}
	}
	for _, n := range h.pending {
		all += n
	}
	b := s.cfg.Budgets
	switch {
	case owner != "" && b.SessionsPerCaller >= 0 && mine >= b.SessionsPerCaller:
		return fmt.Sprintf("this caller has %d MCP sessions open, its limit: end one (DELETE /mcp with its Mcp-Session-Id) or wait for one to time out", mine)
	case b.Sessions >= 0 && all >= b.Sessions:
		return fmt.Sprintf("the service has %d MCP sessions open, its limit: retry later", all)
	}
	h.pending[owner]++
	return ""
}

// bindingWriter sees the headers of the response that opens an MCP
// session, and binds the session to its caller before the client learns
// its id.
type bindingWriter struct {
	http.ResponseWriter
	bind func(id string)
	seen bool
}

func (w *bindingWriter) see() {
	if !w.seen {
		w.seen = true
		if id := w.Header().Get(sessionIDHeader); id != "" {
			w.bind(id)
		}
	}
}

func (w *bindingWriter) WriteHeader(code int) { w.see(); w.ResponseWriter.WriteHeader(code) }

func (w *bindingWriter) Write(b []byte) (int, error) { w.see(); return w.ResponseWriter.Write(b) }

func (w *bindingWriter) Flush() {
	w.see()
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (w *bindingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// httpError answers as the HTTP service does: {"error": {"code", "message"}}.
func httpError(w http.ResponseWriter, status int, code, msg string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// workspaceBudget counts the bytes the MCP sessions' workspaces hold, in
// all and by caller.
type workspaceBudget struct {
	global, perCaller int64
	mu                sync.Mutex
	total             int64
	by                map[string]int64
}

// grow adds n bytes (negative: frees them) of owner's, refusing growth
// past a budget.
func (b *workspaceBudget) grow(owner string, n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.by == nil {
		b.by = map[string]int64{}
	}
	if n > 0 {
		switch mine := b.by[owner]; {
		case owner != "" && b.perCaller >= 0 && mine+n > b.perCaller:
			return &skills.Error{Code: runs.CodeBudgetExceeded, Message: fmt.Sprintf(
				"this caller's MCP workspaces hold %s, and %s more would pass its budget of %s: remove files or end a session",
				units.FormatSize(uint64(mine)), units.FormatSize(uint64(n)), units.FormatSize(uint64(b.perCaller)))}
		case b.global >= 0 && b.total+n > b.global:
			return &skills.Error{Code: runs.CodeBudgetExceeded, Message: fmt.Sprintf(
				"the service's MCP workspaces hold %s, its budget of %s: retry later", units.FormatSize(uint64(b.total)), units.FormatSize(uint64(b.global)))}
		}
	}
	b.total += n
	if b.by[owner] += n; b.by[owner] <= 0 {
		delete(b.by, owner)
	}
	return nil
}
