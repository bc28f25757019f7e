package wasmpy

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/wasmpy/wasmpy/internal/engine"
	"github.com/wasmpy/wasmpy/workspace"
)

// SessionLimits bound a sandbox's sessions. A zero field means the default.
type SessionLimits struct {
	// Max is how many sessions may be open at once; default 100.
	Max int
	// IdleTTL closes a session no turn has used for this long; default 30
	// minutes.
	IdleTTL time.Duration
	// MaxStateBytes caps a session's state: the pages of memory that differ
	// from the interpreter's image, plus the workspace overlay's files. A
	// turn that would leave more is discarded (KindMemory) and the session
	// stays where it was. It also bounds what RestoreSession reads. Default
	// 256 MiB.
	MaxStateBytes int64
}

// DefaultSessionLimits are the limits where Config.Sessions sets none.
func DefaultSessionLimits() SessionLimits {
	return SessionLimits{Max: 100, IdleTTL: 30 * time.Minute, MaxStateBytes: 256 << 20}
}

// Or returns l with its zero fields taken from d: a sandbox's session
// limits are Config.Sessions.Or(DefaultSessionLimits()).
func (l SessionLimits) Or(d SessionLimits) SessionLimits {
	if l.Max == 0 {
		l.Max = d.Max
	}
	if l.IdleTTL == 0 {
		l.IdleTTL = d.IdleTTL
	}
	if l.MaxStateBytes == 0 {
		l.MaxStateBytes = d.MaxStateBytes
	}
	return l
}

func (l SessionLimits) validate() error {
	if l.Max < 0 || l.IdleTTL < 0 || l.MaxStateBytes < 0 {
		return errors.New("wasmpy: session limits must not be negative")
	}
	return nil
}

var (
	// ErrSessionClosed is returned by a closed session's methods.
	ErrSessionClosed = errors.New("wasmpy: session closed")
	// ErrSessionExpired is returned by the methods of a session closed
	// because it was idle past SessionLimits.IdleTTL.
	ErrSessionExpired = errors.New("wasmpy: session expired: idle past its TTL")
	// ErrTooManySessions is returned by NewSession, Fork and RestoreSession
	// when SessionLimits.Max sessions are open.
	ErrTooManySessions = errors.New("wasmpy: too many open sessions")
	// ErrForeignSession is returned for a session state made by a sandbox
	// with another interpreter, standard library, package sets or preload.
	ErrForeignSession = errors.New("wasmpy: the session was made with another interpreter, standard library, package sets or preload")
	// ErrSessionSeal is returned for a saved session or delta not sealed
	// under the sandbox's Config.SessionKey.
	ErrSessionSeal = errors.New("wasmpy: saved session refused")
)

// Session is Python state that lasts across runs. Every turn runs in a
// fresh instance started from the memory the previous turn left behind:
// variables, imports, functions, classes and the workspace overlay carry
// over; nothing else does (open files, threads, the clock, stdin). A
// session runs one turn at a time; it is safe for concurrent use.
//
// A turn whose code ran to its end, or to an exception, a syntax error or
// sys.exit, moves the session on to the state it left (as a notebook keeps
// what a failing cell assigned before it raised). A turn the host stopped
// (timeout, fuel, memory, output, interrupted, internal) or that left the
// interpreter mid-call (os._exit, abort) leaves the session at its state
// before the turn: SessionTurn.Kept says which happened.
type Session struct {
	sb  *Sandbox
	id  string
	ttl time.Duration
	max int64

	mu     sync.Mutex // held by a turn
	state  *sessionState
	prev   *sessionState // the state before the last turn kept, for SaveDelta; nil if none
	turns  int
	used   time.Time
	timer  *time.Timer
	closed error // ErrSessionClosed or ErrSessionExpired, once closed
}

// sessionState is what a session holds between turns; immutable, so forks
// share it.
type sessionState struct {
	mem     *engine.State // nil: the interpreter's image, untouched
	overlay *workspace.Overlay

	hashOnce sync.Once
	hash     string
	ovOnce   sync.Once
	ovSum    [sha256.Size]byte
}

// overlaySum identifies the overlay alone, for SaveDelta to tell whether
// it changed.
func (st *sessionState) overlaySum() [sha256.Size]byte {
	st.ovOnce.Do(func() {
		h := sha256.New()
		st.overlay.Hash(h)
		h.Sum(st.ovSum[:0])
	})
	return st.ovSum
}

// Hash identifies the state by content, for provenance.
func (st *sessionState) Hash(key string) string {
	st.hashOnce.Do(func() {
		h := sha256.New()
		if st.mem == nil {
			h.Write([]byte("image " + key))
		} else {
			h.Write([]byte("state " + st.mem.Hash()))
		}
		st.overlay.Hash(h)
		st.hash = hex.EncodeToString(h.Sum(nil))
	})
	return st.hash
}

// bytes is what counts against SessionLimits.MaxStateBytes.
func (st *sessionState) bytes() int64 {
	n := st.overlay.Size()
	if st.mem != nil {
		n += int64(st.mem.Bytes())
	}
	return n
}

// SessionTurn describes a session's turn in its Result.
type SessionTurn struct {
	ID   string `json:"id"`
	Turn int    `json:"turn"` // 1 for a session's first turn; a fork counts on from its parent
	// Kept says whether the session moved on to the state this turn left;
	// when false it stays at StateBefore.
	Kept        bool   `json:"kept"`
	StateBefore string `json:"state_before"` // hash of the state the turn began from
	StateAfter  string `json:"state_after"`  // hash of the session's state after the turn
	StateBytes  int64  `json:"state_bytes"`  // the state's size against MaxStateBytes
	// MaxStateBytes is the session's cap on StateBytes.
	MaxStateBytes int64 `json:"max_state_bytes"`
}

// SessionInfo describes a session between turns.
type SessionInfo struct {
	ID            string    `json:"id"`
	Turns         int       `json:"turns"`
	StateBytes    int64     `json:"state_bytes"`
	MaxStateBytes int64     `json:"max_state_bytes"`
	StateHash     string    `json:"state_hash"`
	LastUsed      time.Time `json:"last_used"`
	ExpiresAt     time.Time `json:"expires_at"`
}

// SessionStats are a sandbox's session counts, for metrics.
type SessionStats struct {
	Open     int    `json:"open"`
	Max      int    `json:"max"`
	Created  uint64 `json:"created"`  // opened, forked or restored
	Expired  uint64 `json:"expired"`  // closed for idling past their TTL
	Refused  uint64 `json:"refused"`  // not opened: Max were open
	Discards uint64 `json:"discards"` // turns whose state passed MaxStateBytes
}

// sessions is a sandbox's register of open sessions.
type sessions struct {
	limits SessionLimits
	mu     sync.Mutex
	open   map[string]*Session
	stats  SessionStats
}

// NewSession opens a session whose first turn starts from a fresh
// interpreter. It fails with ErrTooManySessions when SessionLimits.Max are
// open, and for an interpreter other than the core build.
func (s *Sandbox) NewSession(ctx context.Context) (*Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if s.interp.Kind != "core" {
		return nil, errors.New("wasmpy: sessions need the core interpreter build")
	}
	return s.openSession(newSessionID(), &sessionState{overlay: &workspace.Overlay{}}, 0)
}

// newSessionID returns a random (version 4) UUID, as provenance ids are.
func newSessionID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// openSession registers a session, within SessionLimits.Max.
func (s *Sandbox) openSession(id string, st *sessionState, turns int) (*Session, error) {
	r := &s.sessions
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.open[id]; dup {
		return nil, fmt.Errorf("wasmpy: session %s is already open in this sandbox", id)
	}
	if len(r.open) >= r.limits.Max {
		r.stats.Refused++
		return nil, fmt.Errorf("%w: the limit is %d", ErrTooManySessions, r.limits.Max)
	}
	sess := &Session{sb: s, id: id, ttl: r.limits.IdleTTL, max: r.limits.MaxStateBytes, state: st, turns: turns, used: time.Now()}
	sess.mu.Lock() // expire reads the timer, under mu: a short TTL may fire before AfterFunc returns
	sess.timer = time.AfterFunc(sess.ttl, sess.expire)
	sess.mu.Unlock()
	if r.open == nil {
		r.open = map[string]*Session{}
	}
	r.open[id] = sess
	r.stats.Created++
	return sess, nil
}

// Session returns the open session with id, if any.
func (s *Sandbox) Session(id string) (*Session, bool) {
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	sess, ok := s.sessions.open[id]
	return sess, ok
}

// SessionStats counts the sandbox's sessions.
func (s *Sandbox) SessionStats() SessionStats {
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	st := s.sessions.stats
	st.Open, st.Max = len(s.sessions.open), s.sessions.limits.Max
	return st
}

// closeSessions closes every open session, when the sandbox closes.
func (s *Sandbox) closeSessions() {
	s.sessions.mu.Lock()
	open := make([]*Session, 0, len(s.sessions.open))
	for _, sess := range s.sessions.open {
		open = append(open, sess)
	}
	s.sessions.mu.Unlock()
	for _, sess := range open {
		sess.Close()
	}
}

// ID identifies the session, a random UUID; a saved session keeps it.
func (s *Session) ID() string { return s.id }

// Info describes the session as it is between turns.
func (s *Session) Info() (SessionInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed != nil {
		return SessionInfo{}, s.closed
	}
	return SessionInfo{ID: s.id, Turns: s.turns, StateBytes: s.state.bytes(), MaxStateBytes: s.max,
		StateHash: s.state.Hash(s.sb.engine.Key()), LastUsed: s.used, ExpiresAt: s.used.Add(s.ttl)}, nil
}

// Run runs job as the session's next turn, once the turn before it has
// ended. The Result's Session field says whether the session kept the
// state the turn left; its Files list the session's whole overlay.
func (s *Session) Run(ctx context.Context, job Job) (*Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed != nil {
		return nil, s.closed
	}
	t := &turn{from: s.state}
	res, err := s.sb.run(ctx, job, t)
	s.used = time.Now()
	if err != nil {
		return nil, err
	}
	s.turns++
	key := s.sb.engine.Key()
	info := &SessionTurn{ID: s.id, Turn: s.turns, StateBefore: s.state.Hash(key), MaxStateBytes: s.max}
	if t.next != nil && t.next.bytes() > s.max {
		s.sb.sessions.mu.Lock()
		s.sb.sessions.stats.Discards++
		s.sb.sessions.mu.Unlock()
		res.Error = &Error{Kind: KindMemory, Message: fmt.Sprintf("session state of %d bytes exceeds the session's limit of %d: the session stays at its state before this turn",
			t.next.bytes(), s.max)}
		res.ExitCode = engine.ExitCode(string(KindMemory))
		s.sb.engine.Forget(t.next.mem) // no turn will start from it
		t.next = nil
	}
	if t.next != nil {
		s.prev, s.state, info.Kept = s.state, t.next, true
	}
	info.StateAfter, info.StateBytes = s.state.Hash(key), s.state.bytes()
	res.Session = info
	return res, nil
}

// Fork opens a new session whose turns start from this session's current
// state; the two go on independently.
func (s *Session) Fork() (*Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed != nil {
		return nil, s.closed
	}
	return s.sb.openSession(newSessionID(), s.state, s.turns)
}

// Close discards the session's state. Closing twice is harmless.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeLocked(ErrSessionClosed)
	return nil
}

func (s *Session) closeLocked(why error) {
	if s.closed != nil {
		return
	}
	if s.state.mem != nil {
		s.sb.engine.Forget(s.state.mem)
	}
	s.closed, s.state, s.prev = why, nil, nil
	s.timer.Stop()
	r := &s.sb.sessions
	r.mu.Lock()
	if r.open[s.id] == s {
		delete(r.open, s.id)
	}
	if why == ErrSessionExpired {
		r.stats.Expired++
	}
	r.mu.Unlock()
}

// expire closes the session once it has idled for its TTL; a turn in
// progress holds it open, and its end restarts the wait.
func (s *Session) expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed != nil {
		return
	}
	if idle := time.Since(s.used); idle < s.ttl {
		s.timer.Reset(s.ttl - idle)
		return
	}
	s.closeLocked(ErrSessionExpired)
}
