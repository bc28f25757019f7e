// Package provenance is the record of every run wasmpy makes on someone's
// behalf, the Store interface that keeps those records (and sessions), and the
// canonical hashing the records use. It depends on nothing but the standard
// library, so a store, a report or an audit tool can use it without the
// engine.
//
//	st, err := stores.Open(ctx, "postgres://wasmpy@db/wasmpy") // or a SQLite file path
//	defer st.Close()
//	rec := &provenance.Record{ExecutionID: provenance.NewID(), Kind: provenance.KindExec, Outcome: provenance.OutcomeRunning, ...}
//	err = st.Begin(ctx, rec) // before the run: a crash leaves it running, later marked interrupted
//	...
//	err = st.Finish(ctx, rec) // after it, with the outcome
//
// Two implementations pass one conformance suite (package
// provenance/storetest): provenance/sqlite, embedded, for one host, and
// provenance/postgres, shared by replicas. Package provenance/stores opens
// either from a path or a URL.
package provenance

import "time"

// Kinds of run a Record describes.
const (
	KindSkill   = "skill"   // a registered skill's handler
	KindExec    = "exec"    // raw code (POST /exec, wasmpy exec)
	KindSession = "session" // one turn of a session
	KindGen     = "gen"     // a program generated for a task (wasmpy gen)
	KindDef     = "def"     // a function generated for a signature (wasmpy def)
	KindNet     = "net"     // a Petri net checked and built or run (wasmpy net build, net run)
)

// Kinds lists every kind, in documentation order.
func Kinds() []string {
	return []string{KindSkill, KindExec, KindSession, KindGen, KindDef, KindNet}
}

// Outcomes a Record has besides a run's error.kind (exception, timeout,
// memory, fuel, ...).
const (
	OutcomeRunning       = "running" // the run has not finished (yet)
	OutcomeOK            = "ok"      // a valid output
	OutcomeInvalidOutput = "invalid_output"
	OutcomeInterrupted   = "interrupted" // the process running it died mid-run; found by a store's recovery
	OutcomeCanceled      = "canceled"    // the caller gave up (a closed connection)
	OutcomeInternal      = "internal"    // the host failed, not the code
)

// Record is the provenance of one run: who ran what, on which interpreter,
// under which limits, and how it went. Inputs, outputs and session states are
// kept as hashes only (see Hash), never as payloads.
type Record struct {
	ExecutionID string `json:"execution_id"` // a random UUID (NewID)
	Kind        string `json:"kind"`         // skill, exec, session...
	Skill       string `json:"skill"`        // "" when Kind is not skill
	Version     string `json:"version"`
	ActorID     string `json:"actor_id"`
	ActorType   string `json:"actor_type"`
	// Caller is who asked for the run, as the service authenticated it
	// (runs.Caller.Owner: a token's identity, "" without tokens), unlike
	// the actor, which the request names itself. A caller reads its own
	// records only. Not part of the record's JSON.
	Caller      string `json:"-"`
	Approved    bool   `json:"approved"`
	Tier        string `json:"tier"`         // the trust tier (policy profile) the run had
	CodeHash    string `json:"code_hash"`    // hex SHA-256 of the code run (a skill's handler source, the generated code)
	InputsHash  string `json:"inputs_hash"`  // hex SHA-256 of the canonical JSON of the inputs
	OutputsHash string `json:"outputs_hash"` // likewise of the output; "" when there is none

	// A session turn's session, its number (from 1) and the hashes of the
	// session's saved state before and after it.
	SessionID   string `json:"session_id,omitempty"`
	Turn        int    `json:"turn,omitempty"`
	StateBefore string `json:"state_before,omitempty"`
	StateAfter  string `json:"state_after,omitempty"`

	// Codegen is how the code was generated and checked, for gen, def and
	// net; nil for other kinds.
	Codegen *Codegen `json:"codegen,omitempty"`

	Interpreter Interpreter  `json:"interpreter"`
	Packages    []PackageSet `json:"packages"` // the package sets the run could import from
	Limits      Limits       `json:"limits"`   // as applied: defaults filled in

	Outcome         string     `json:"outcome"` // an Outcome constant or the run's error.kind
	Error           string     `json:"error"`   // one line on why it failed; the exception class, not its message
	DurationMS      float64    `json:"duration_ms"`
	FuelUsed        uint64     `json:"fuel_used"`
	MemoryPeakBytes uint64     `json:"memory_peak_bytes"`
	HostCalls       []HostCall `json:"host_calls"`
	HostCallsTotal  int        `json:"host_calls_total"`
	StartedAt       time.Time  `json:"started_at"`
	FinishedAt      *time.Time `json:"finished_at"` // nil while running, or if interrupted
}

// Codegen is the quality outcome of generated (or, for a net, checked)
// code: counts and flags, never the code or the model's replies.
type Codegen struct {
	Attempts    int  `json:"attempts"`  // replies tried, the cache's included; 0 for a net
	Validated   bool `json:"validated"` // the final code passed validation
	Cached      bool `json:"cached"`    // the code that worked came from the code cache
	TestsPassed int  `json:"tests_passed"`
	TestsFailed int  `json:"tests_failed"`
}

// Interpreter names the interpreter a run used, and the engine that ran it
// (wazero or wasmtime; empty in records from before there were two).
type Interpreter struct {
	Kind    string `json:"kind"`
	Version string `json:"version"`
	SHA256  string `json:"sha256"`
	Engine  string `json:"engine,omitempty"`
}

// PackageSet is one package set mounted for a run.
type PackageSet struct {
	Name          string   `json:"name"`          // the set's file name
	SHA256        string   `json:"sha256"`        // of the set's file
	Distributions []string `json:"distributions"` // "name version", sorted
}

// Limits are the limits a run had; a zero field means none was set.
type Limits struct {
	TimeoutMS   int64  `json:"timeout_ms"`
	MemoryBytes uint64 `json:"memory_bytes"`
	OutputBytes int    `json:"output_bytes"`
	Fuel        uint64 `json:"fuel"`
}

// HostCall is one call the guest made to a host function.
type HostCall struct {
	Name       string  `json:"name"`
	DurationMS float64 `json:"duration_ms"`
	OK         bool    `json:"ok"`
	Error      string  `json:"error,omitempty"` // the Python exception class, when not OK
}
