package provenance

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Errors a Store returns, to be tested with errors.Is.
var (
	ErrNotFound = errors.New("provenance: not found")            // no record or session with this id
	ErrExists   = errors.New("provenance: already exists")       // CreateSession with an id in use
	ErrConflict = errors.New("provenance: changed concurrently") // UpdateSession lost a race: reload and retry, or give up
)

// Recorder is what a run needs: Begin before it, with Outcome "running";
// Finish after it, with the complete record; Get by execution id.
type Recorder interface {
	// Begin inserts rec, whose Outcome is running.
	Begin(ctx context.Context, rec *Record) error
	// Finish completes a record written by Begin: its outcome, measurements,
	// code and outputs hashes, codegen outcome, session state after, and
	// finish time. A record a
	// recovery marked interrupted (its process seemed dead) takes the real
	// outcome when it does finish.
	Finish(ctx context.Context, rec *Record) error
	// Get returns one record, or ErrNotFound.
	Get(ctx context.Context, id string) (*Record, error)
}

// Store keeps records, sessions, registered skills and tokens durably: what
// replicas share. Every implementation is safe for
// concurrent use and passes provenance/storetest.
//
// Each open Store is an owner: the records it begins are its own. A process
// that dies leaves records running; Recover (which opening a Store also does)
// marks the running records of dead owners interrupted and leaves those of
// live owners alone, so replicas sharing one database recover each other's
// crashes, not each other's work.
type Store interface {
	Recorder
	// List returns the records f selects, newest first.
	List(ctx context.Context, f Filter) ([]*Record, error)
	// Stats summarises the records f selects (its Limit is ignored) per kind
	// and skill, sorted by kind then skill.
	Stats(ctx context.Context, f Filter) ([]Stats, error)
	// Recover marks the running records of dead owners interrupted and
	// returns how many it marked.
	Recover(ctx context.Context) (int, error)

	Sessions
	Skills
	Tokens

	// Ping reports whether the database answers, for readiness checks.
	Ping(ctx context.Context) error
	// Close marks this owner's records still running as interrupted (they
	// will never be finished here) and releases the database.
	Close() error
}

// Sessions keep sessions' saved states, so that any replica can take a
// session's next turn.
type Sessions interface {
	// CreateSession inserts s, or fails with ErrExists.
	CreateSession(ctx context.Context, s *Session) error
	// GetSession returns a session with its state and the deltas after
	// it, or ErrNotFound.
	GetSession(ctx context.Context, id string) (*Session, error)
	// StatSession returns a session without its state or deltas, or
	// ErrNotFound: enough to tell whether a copy in memory is current.
	StatSession(ctx context.Context, id string) (*Session, error)
	// SessionDeltas returns the deltas saved for the turns after
	// afterTurn, oldest first, for a copy in memory to catch up; none is
	// no error.
	SessionDeltas(ctx context.Context, id string, afterTurn int) ([][]byte, error)
	// UpdateSession replaces the session s.ID's turn, state, state hash and
	// update time, and drops its deltas, if its stored turn is still
	// prevTurn; else ErrConflict (another turn, perhaps on another replica,
	// got there first), or ErrNotFound.
	UpdateSession(ctx context.Context, s *Session, prevTurn int) error
	// AppendSession adds delta after the session s.ID's state and deltas,
	// and sets its turn (s.Turn, which orders the deltas), state hash and
	// update time, on the same terms as UpdateSession. It sets s.Size.
	AppendSession(ctx context.Context, s *Session, delta []byte, prevTurn int) error
	// DeleteSession removes a session and its deltas, or fails with
	// ErrNotFound.
	DeleteSession(ctx context.Context, id string) error
	// ListSessions returns the sessions f selects, without their states,
	// most recently updated first.
	ListSessions(ctx context.Context, f SessionFilter) ([]*Session, error)
}

// Skills keep the skills registered over the API, so that every replica
// serves them and they survive a restart.
type Skills interface {
	// RegisterSkill stores a skill version, or fails with ErrExists: a name
	// and version are registered once, never overwritten.
	RegisterSkill(ctx context.Context, s *RegisteredSkill) error
	// RegisteredSkills returns every registered version with its files,
	// disabled ones included, by name, then in the order registered.
	RegisteredSkills(ctx context.Context) ([]*RegisteredSkill, error)
	// SkillState returns one version's hash and whether it is disabled, or
	// fails with ErrNotFound: what a replica asks before it runs a version,
	// so that a version disabled, deleted or replaced (deleted and
	// registered again) elsewhere is seen at once.
	SkillState(ctx context.Context, name, version string) (hash string, disabled bool, err error)
	// SetSkillDisabled disables or enables one version for by (who asked),
	// or fails with ErrNotFound.
	SetSkillDisabled(ctx context.Context, name, version string, disabled bool, by string) error
	// DeleteSkill removes one version for by, or fails with ErrNotFound.
	DeleteSkill(ctx context.Context, name, version, by string) error
	// SkillAudit returns the audit trail f selects, newest first.
	// RegisterSkill, SetSkillDisabled and DeleteSkill each append an entry
	// in the same transaction as their change, so no change goes unrecorded.
	SkillAudit(ctx context.Context, f AuditFilter) ([]*AuditEntry, error)
}

// The actions an AuditEntry records.
const (
	ActionRegister = "register"
	ActionDisable  = "disable"
	ActionEnable   = "enable"
	ActionDelete   = "delete"
)

// AuditEntry is one change to the registered skills: who, what, when, and
// the hash of the version's files.
type AuditEntry struct {
	At      time.Time `json:"at"`
	Actor   string    `json:"actor"` // the token's name, or the actor
	Action  string    `json:"action"`
	Skill   string    `json:"skill"`
	Version string    `json:"version"`
	Hash    string    `json:"hash"` // RegisteredSkill.Hash
}

// AuditFilter selects audit entries; zero fields select everything.
type AuditFilter struct {
	Skill string
	Limit int // at most this many, newest first; 0 means 100
}

// HashFiles is the hex SHA-256 of a set of files, names and contents:
// of their JSON object, whose keys are sorted.
func HashFiles(files map[string][]byte) string {
	b, _ := json.Marshal(files) // a map of byte slices always marshals
	return HashBytes(b)
}

// Tokens keep the service's bearer tokens, as hashes, with their roles.
type Tokens interface {
	// CreateToken stores t, or fails with ErrExists for a name or hash in
	// use.
	CreateToken(ctx context.Context, t *Token) error
	// TokenByHash returns the token whose hash is hash, or ErrNotFound.
	TokenByHash(ctx context.Context, hash string) (*Token, error)
	// ListTokens returns every token, by name.
	ListTokens(ctx context.Context) ([]*Token, error)
	// DeleteToken removes the token called name, or fails with ErrNotFound.
	DeleteToken(ctx context.Context, name string) error
}

// RegisteredSkill is one version of a skill registered over the API: its
// files as they were given (skill.yaml, schema.json, the handler), opaque
// to the store.
type RegisteredSkill struct {
	Name    string            `json:"name"`
	Version string            `json:"version"`
	Files   map[string][]byte `json:"-"`
	// Hash is HashFiles(Files); RegisterSkill sets it.
	Hash         string    `json:"hash"`
	Disabled     bool      `json:"disabled"`
	RegisteredBy string    `json:"registered_by"` // the token's name, or the actor
	RegisteredAt time.Time `json:"registered_at"` // zero: the store sets now
}

// Filter selects records; zero fields select everything.
type Filter struct {
	Kind      string
	Skill     string // "-" selects records without a skill
	Outcome   string
	ActorID   string
	SessionID string
	IDPrefix  string    // execution ids that start with this
	Since     time.Time // started at or after
	Limit     int       // List only: at most this many, newest first; 0 means 50
}

// Stats summarise the records of one kind and skill.
type Stats struct {
	Kind  string `json:"kind"`
	Skill string `json:"skill"` // "" when the kind has none
	Total int    `json:"total"`
	// SuccessRate is ok / finished, where finished excludes runs still
	// running; 0 when nothing finished.
	SuccessRate float64 `json:"success_rate"`
	// Nearest-rank percentiles over the runs that ran to an outcome (not
	// running, interrupted, canceled or internal); 0 when there are none.
	P50MS    float64        `json:"p50_ms"`
	P90MS    float64        `json:"p90_ms"`
	P95MS    float64        `json:"p95_ms"`
	P99MS    float64        `json:"p99_ms"`
	Outcomes map[string]int `json:"outcomes"`
}

// Session is a saved session: Python state that lasts across turns. The
// store keeps its state, and the deltas saved after it (each turn's
// changes), as opaque bytes; Turn orders updates, so two replicas cannot
// both take the same turn.
type Session struct {
	ID    string `json:"session_id"`
	Owner string `json:"owner"` // who may use it (a token's name); "" for anyone
	Tier  string `json:"tier"`  // the trust tier its turns run under; "" for the default
	Turn  int    `json:"turn"`  // turns taken; 0 for a new session
	State []byte `json:"-"`     // the saved session; nil from ListSessions and StatSession
	// Deltas follow State, oldest first; nil from ListSessions and
	// StatSession.
	Deltas [][]byte `json:"-"`
	// StateHash identifies the state the deltas lead to: the caller's
	// hash of it, kept as given.
	StateHash string    `json:"state_hash"`
	Size      int64     `json:"size"` // len(State) and the deltas' lengths
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SessionFilter selects sessions; zero fields select everything.
type SessionFilter struct {
	Owner         string
	UpdatedBefore time.Time // idle since before this (to expire them)
	Limit         int       // at most this many; 0 means all
}
