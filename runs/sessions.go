package runs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/skills"
)

// SessionStore keeps an Executor's sessions: provenance.Store's session
// methods. With one, a session outlives the process, and a replica sharing
// the store can take it up.
type SessionStore interface {
	CreateSession(ctx context.Context, s *provenance.Session) error
	GetSession(ctx context.Context, id string) (*provenance.Session, error)
	StatSession(ctx context.Context, id string) (*provenance.Session, error)
	SessionDeltas(ctx context.Context, id string, afterTurn int) ([][]byte, error)
	UpdateSession(ctx context.Context, s *provenance.Session, prevTurn int) error
	AppendSession(ctx context.Context, s *provenance.Session, delta []byte, prevTurn int) error
	DeleteSession(ctx context.Context, id string) error
	ListSessions(ctx context.Context, f provenance.SessionFilter) ([]*provenance.Session, error)
}

var (
	// ErrNoSession is the error for a session that does not exist, or
	// belongs to another owner: the two are not told apart.
	ErrNoSession = errors.New("runs: no such session")
	// ErrSessionConflict is a turn that lost a race with another turn of
	// its session (on another replica): its state was not kept, and a
	// retry runs from the newer state.
	ErrSessionConflict = errors.New("runs: the session changed concurrently (another replica took a turn): retry")
)

// CodeTooManySessions is the Error code for a session refused because the
// limit of open sessions is reached.
const CodeTooManySessions = "too_many_sessions"

// SessionInfo describes a session.
type SessionInfo struct {
	ID    string `json:"session_id"`
	Tier  string `json:"tier"` // the trust tier its turns run under
	Turns int    `json:"turns"`
	// StateHash identifies the state the next turn starts from.
	StateHash string `json:"state_hash"`
	// StateBytes is the state's size against MaxStateBytes; SavedBytes
	// what the store keeps of it, compressed.
	StateBytes    int64     `json:"state_bytes"`
	MaxStateBytes int64     `json:"max_state_bytes"`
	SavedBytes    int64     `json:"saved_bytes,omitempty"`
	ExpiresAt     time.Time `json:"expires_at"` // unless a turn comes first
}

// live is a session open in the sandbox; mu orders its turns, saves and
// forks, from the state the store has to the state it gets next.
type live struct {
	mu    sync.Mutex
	sess  *wasmpy.Session
	owner string // Caller.sessionOwner()
	// bytes is the state's size as last seen (StateBytes), for the memory
	// budget to read without waiting for a turn to end.
	bytes atomic.Int64
	tier  string // the tier its turns run under; "" (a session from before tiers): the default
	// What the store holds of it: a whole save of base bytes, then deltas
	// (one a turn) of deltaBytes in all.
	base, deltaBytes int64
	deltas           int
}

// maxDeltas bounds the deltas the store keeps after a session's whole
// save; past it, or once they outweigh the save, a turn saves the session
// whole again, so that loading it stays cheap.
const maxDeltas = 64

// sessions are the Executor's open sessions, by id.
type sessions struct {
	mu   sync.Mutex
	open map[string]*live
}

// session returns the live session id of owner, open here or restored
// from the store, locked for the caller.
func (e *Executor) session(ctx context.Context, id, owner string) (*live, error) {
	e.sessions.mu.Lock()
	l, ok := e.sessions.open[id]
	e.sessions.mu.Unlock()
	if ok {
		if l.owner != owner {
			return nil, ErrNoSession
		}
		l.mu.Lock() // outside sessions.mu: a long turn holds only its own
		if in, err := l.sess.Info(); err == nil {
			if err := e.refresh(ctx, l, in); err != nil {
				l.mu.Unlock()
				if errors.Is(err, ErrNoSession) {
					e.forget(id)
				}
				return nil, err
			}
			return l, nil
		}
		l.mu.Unlock() // expired in memory: the store may still have it
		e.sessions.mu.Lock()
		if e.sessions.open[id] == l {
			delete(e.sessions.open, id)
		}
		e.sessions.mu.Unlock()
	}
	if e.cfg.Sessions == nil || !provenance.ValidID(id) {
		return nil, ErrNoSession
	}
	// Restored under sessions.mu, so two requests restore it once.
	e.sessions.mu.Lock()
	if _, ok := e.sessions.open[id]; ok { // restored meanwhile by another request
		e.sessions.mu.Unlock()
		return e.session(ctx, id, owner)
	}
	defer e.sessions.mu.Unlock()
	saved, err := e.cfg.Sessions.GetSession(ctx, id)
	switch {
	case errors.Is(err, provenance.ErrNotFound):
		return nil, ErrNoSession
	case err != nil:
		return nil, fmt.Errorf("runs: loading session: %w", err)
	case saved.Owner != owner:
		return nil, ErrNoSession
	}
	l = &live{owner: owner, tier: saved.Tier}
	if err := e.load(ctx, l, saved); err != nil {
		return nil, err
	}
	if in, err := l.sess.Info(); err == nil {
		l.bytes.Store(in.StateBytes)
	}
	return e.track(l), nil
}

// load restores the session the store saved into l: its whole save, then
// its deltas in order.
func (e *Executor) load(ctx context.Context, l *live, saved *provenance.Session) error {
	sess, err := e.sb.RestoreSession(ctx, bytes.NewReader(saved.State))
	if err != nil {
		return sessionError(err)
	}
	l.base, l.deltas, l.deltaBytes = int64(len(saved.State)), len(saved.Deltas), 0
	for _, d := range saved.Deltas {
		if err := sess.ApplyDelta(bytes.NewReader(d)); err != nil {
			sess.Close()
			return err
		}
		l.deltaBytes += int64(len(d))
	}
	l.sess = sess
	return nil
}

// refresh brings the live session l (its state in) up to the store's:
// another replica sharing the store may have taken turns since this one
// last did, and a turn run from the older state would be lost to a
// conflict. Without a store it does nothing; l.mu is held.
func (e *Executor) refresh(ctx context.Context, l *live, in wasmpy.SessionInfo) error {
	if e.cfg.Sessions == nil {
		return nil
	}
	head, err := e.cfg.Sessions.StatSession(ctx, in.ID) // not the state: l is most likely current
	switch {
	case errors.Is(err, provenance.ErrNotFound):
		return ErrNoSession // closed by another replica
	case err != nil:
		return fmt.Errorf("runs: loading session: %w", err)
	case head.Turn == in.Turns && head.StateHash == in.StateHash:
		return nil
	case head.Turn > in.Turns && e.catchUp(ctx, l, in, head):
		return nil
	}
	saved, err := e.cfg.Sessions.GetSession(ctx, in.ID)
	switch {
	case errors.Is(err, provenance.ErrNotFound):
		return ErrNoSession
	case err != nil:
		return fmt.Errorf("runs: loading session: %w", err)
	}
	l.sess.Close()               // first: the restored one takes its place among the open
	return e.load(ctx, l, saved) // on failure l is closed: the next request restores it afresh
}

// catchUp moves l on by the deltas the store has after its turn, when
// another replica's turns were saved as deltas from l's state; each must
// start from the state before it (ApplyDelta checks), so after a whole save
// it fails, and refresh reads the session whole.
func (e *Executor) catchUp(ctx context.Context, l *live, in wasmpy.SessionInfo, head *provenance.Session) bool {
	deltas, err := e.cfg.Sessions.SessionDeltas(ctx, in.ID, in.Turns)
	if err != nil || len(deltas) == 0 {
		return false
	}
	for _, d := range deltas {
		if l.sess.ApplyDelta(bytes.NewReader(d)) != nil {
			return false
		}
		l.deltas, l.deltaBytes = l.deltas+1, l.deltaBytes+int64(len(d))
	}
	now, err := l.sess.Info()
	return err == nil && now.Turns >= head.Turn
}

// track registers l as open, locked for the caller; sessions.mu is held.
func (e *Executor) track(l *live) *live {
	l.mu.Lock()
	if e.sessions.open == nil {
		e.sessions.open = map[string]*live{}
	}
	e.sessions.open[l.sess.ID()] = l
	return l
}

func (e *Executor) forget(id string) {
	e.sessions.mu.Lock()
	if l, ok := e.sessions.open[id]; ok {
		l.sess.Close()
		delete(e.sessions.open, id)
	}
	e.sessions.mu.Unlock()
}

// sessionError makes the sandbox's refusals Errors with codes.
func sessionError(err error) error {
	if errors.Is(err, wasmpy.ErrTooManySessions) {
		return &skills.Error{Code: CodeTooManySessions, Message: err.Error()}
	}
	return err
}

// NewSession opens a session of c's whose turns run in tier (see ExecTier:
// "" for the default, within c's maximum) and saves it to the store. Only
// c (the same Owner and Scope) can reach it.
func (e *Executor) NewSession(ctx context.Context, c Caller, tier string) (*SessionInfo, error) {
	t, err := e.ExecTier(c, tier)
	if err != nil {
		return nil, err
	}
	if err := e.admitSession(ctx, c); err != nil {
		return nil, err
	}
	sess, err := e.sb.NewSession(ctx)
	if err != nil {
		return nil, sessionError(err)
	}
	return e.opened(ctx, sess, c.sessionOwner(), t.Name)
}

// admitSession applies the sandbox's session limits to the store, which
// outlives any one process: it deletes the sessions idle past the TTL,
// and refuses a new one when the store holds the most it may, or when c
// is past a budget.
func (e *Executor) admitSession(ctx context.Context, c Caller) error {
	if err := e.withinBudgets(ctx, c, true); err != nil {
		return err
	}
	if e.cfg.Sessions == nil {
		return nil
	}
	lim := e.cfg.Sandbox.Sessions.Or(wasmpy.DefaultSessionLimits())
	idle, err := e.cfg.Sessions.ListSessions(ctx, provenance.SessionFilter{UpdatedBefore: time.Now().Add(-lim.IdleTTL)})
	if err != nil {
		return fmt.Errorf("runs: listing sessions: %w", err)
	}
	for _, s := range idle {
		e.forget(s.ID)
		if err := e.cfg.Sessions.DeleteSession(ctx, s.ID); err != nil && !errors.Is(err, provenance.ErrNotFound) {
			return fmt.Errorf("runs: expiring session: %w", err)
		}
	}
	all, err := e.cfg.Sessions.ListSessions(ctx, provenance.SessionFilter{Limit: lim.Max})
	if err != nil {
		return fmt.Errorf("runs: listing sessions: %w", err)
	}
	if len(all) >= lim.Max {
		return &skills.Error{Code: CodeTooManySessions, Message: fmt.Sprintf("the service holds %d sessions, its limit: close one (DELETE /sessions/{id})", lim.Max)}
	}
	return nil
}

// opened registers and stores a session just made (new or forked).
func (e *Executor) opened(ctx context.Context, sess *wasmpy.Session, owner, tier string) (*SessionInfo, error) {
	e.sessions.mu.Lock()
	l := e.track(&live{sess: sess, owner: owner, tier: tier})
	e.sessions.mu.Unlock()
	defer l.mu.Unlock()
	if in, err := sess.Info(); err == nil {
		l.bytes.Store(in.StateBytes)
	}
	saved, err := e.save(ctx, l, -1, "")
	if err != nil {
		e.forget(sess.ID())
		return nil, err
	}
	return e.info(l, saved)
}

// save writes the session to the store: a new row (prevTurn < 0), or the
// turn after prevTurn, which began at the state whose hash is since: as a
// delta from it, or whole when the deltas have grown past maxDeltas or
// the whole save. Without a store it saves nothing.
func (e *Executor) save(ctx context.Context, l *live, prevTurn int, since string) (*provenance.Session, error) {
	if e.cfg.Sessions == nil {
		return nil, nil
	}
	info, err := l.sess.Info()
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	saved := &provenance.Session{ID: info.ID, Owner: l.owner, Tier: l.tier, Turn: info.Turns, StateHash: info.StateHash,
		CreatedAt: now, UpdatedAt: now}
	ctx = context.WithoutCancel(ctx) // a turn that ran is kept even if its caller left
	var buf bytes.Buffer
	whole := prevTurn < 0 || l.deltas >= maxDeltas || l.deltaBytes > l.base
	if whole {
		err = l.sess.Save(&buf)
	} else {
		err = l.sess.SaveDelta(&buf, since)
	}
	if err != nil {
		return nil, err
	}
	switch {
	case prevTurn < 0:
		saved.State = buf.Bytes()
		err = e.cfg.Sessions.CreateSession(ctx, saved)
	case whole:
		saved.State = buf.Bytes()
		err = e.cfg.Sessions.UpdateSession(ctx, saved, prevTurn)
	default:
		err = e.cfg.Sessions.AppendSession(ctx, saved, buf.Bytes(), prevTurn)
	}
	switch {
	case errors.Is(err, provenance.ErrConflict):
		return nil, ErrSessionConflict
	case errors.Is(err, provenance.ErrNotFound):
		return nil, ErrNoSession // deleted meanwhile
	case err != nil:
		return nil, fmt.Errorf("runs: saving session: %w", err)
	}
	if whole {
		l.base, l.deltas, l.deltaBytes = int64(buf.Len()), 0, 0
	} else {
		l.deltas, l.deltaBytes = l.deltas+1, l.deltaBytes+int64(buf.Len())
	}
	return saved, nil
}

func (e *Executor) info(l *live, saved *provenance.Session) (*SessionInfo, error) {
	in, err := l.sess.Info()
	if err != nil {
		return nil, ErrNoSession
	}
	out := &SessionInfo{ID: in.ID, Tier: l.tier, Turns: in.Turns, StateHash: in.StateHash, StateBytes: in.StateBytes,
		MaxStateBytes: in.MaxStateBytes, ExpiresAt: in.ExpiresAt}
	if saved != nil {
		out.SavedBytes = saved.Size
	}
	return out, nil
}

// Session describes session id of c's, or fails with ErrNoSession.
func (e *Executor) Session(ctx context.Context, id string, c Caller) (*SessionInfo, error) {
	l, err := e.session(ctx, id, c.sessionOwner())
	if err != nil {
		return nil, err
	}
	defer l.mu.Unlock()
	return e.info(l, nil)
}

// SessionExec runs req as the next turn of session id of req.Caller's (a
// session of another caller is ErrNoSession) and records its
// provenance (kind session: the session, the turn, the state's hash
// before and after). The turn may call submit_result and the workspace's
// file functions; its files stay in the session, unless req.Workspace
// names a directory the caller keeps them in. The session is saved to
// the store after the turn; a turn another replica's turn overtook fails
// with ErrSessionConflict, its state dropped and its record internal. A
// turn is refused (tier_forbidden) when the session's tier is above the
// caller's maximum, and (budget_exceeded) while the caller is past a
// budget (ExecutorConfig.Budgets).
func (e *Executor) SessionExec(ctx context.Context, id string, req ExecRequest) (*Execution, error) {
	rec, job, err := execJob(req, provenance.KindSession)
	if err != nil {
		return nil, err
	}
	job.Filename = "<session>"
	job.DetachFiles = req.Workspace != ""
	job.Grants = []wasmpy.Capability{wasmpy.SubmitResult, wasmpy.ReadFile, wasmpy.WriteFile, wasmpy.ListFiles}
	l, err := e.session(ctx, id, req.Caller.sessionOwner())
	if err != nil {
		return nil, err
	}
	defer l.mu.Unlock()
	tier, err := e.ExecTier(req.Caller, l.tier)
	if err != nil {
		return nil, err
	}
	if err := e.withinBudgets(ctx, req.Caller, false); err != nil {
		return nil, err
	}
	job = e.apply(tier, job)
	before, err := l.sess.Info()
	if err != nil {
		return nil, ErrNoSession
	}
	rec.SessionID, rec.Turn, rec.StateBefore = id, before.Turns+1, before.StateHash
	var saveErr error
	x, err := e.run(ctx, rec, job, l.sess.Run, func(x *Execution) {
		if t := x.Result.Session; t != nil {
			rec.Turn, rec.StateAfter = t.Turn, t.StateAfter
			l.bytes.Store(t.StateBytes)
		}
		// Saved before the record is finished, so that a turn recorded ok
		// is one the store kept: a process that dies between the two
		// leaves the record running (then interrupted), never an ok turn
		// another replica takes again.
		if _, saveErr = e.save(ctx, l, before.Turns, before.StateHash); saveErr != nil {
			rec.Outcome, rec.Error = provenance.OutcomeInternal, "the turn ran but was not kept: "+saveErr.Error()
		}
	})
	if err != nil {
		return nil, err
	}
	if saveErr != nil {
		e.forget(id) // stale: the next request loads the store's state
		return nil, saveErr
	}
	return x, nil
}

// ForkSession opens a new session of c's from the state of c's session id.
func (e *Executor) ForkSession(ctx context.Context, id string, c Caller) (*SessionInfo, error) {
	if err := e.admitSession(ctx, c); err != nil {
		return nil, err
	}
	owner := c.sessionOwner()
	l, err := e.session(ctx, id, owner)
	if err != nil {
		return nil, err
	}
	sess, err := l.sess.Fork()
	tier := l.tier
	l.mu.Unlock()
	if err != nil {
		return nil, sessionError(err)
	}
	return e.opened(ctx, sess, owner, tier)
}

// CloseSession closes session id of c's and deletes it from the store.
func (e *Executor) CloseSession(ctx context.Context, id string, c Caller) error {
	l, err := e.session(ctx, id, c.sessionOwner())
	if err != nil {
		return err
	}
	defer l.mu.Unlock()
	e.forget(id)
	if e.cfg.Sessions == nil {
		return nil
	}
	if err := e.cfg.Sessions.DeleteSession(ctx, id); err != nil && !errors.Is(err, provenance.ErrNotFound) {
		return fmt.Errorf("runs: deleting session: %w", err)
	}
	return nil
}

// SessionStats counts the sessions open in memory, for metrics.
func (e *Executor) SessionStats() wasmpy.SessionStats { return e.sb.SessionStats() }
