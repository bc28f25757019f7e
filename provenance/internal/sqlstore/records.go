package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/wasmpy/wasmpy/provenance"
)

// Begin inserts rec, whose outcome is "running", as this Store's.
func (s *Store) Begin(ctx context.Context, rec *provenance.Record) error {
	interp, _ := json.Marshal(rec.Interpreter)
	sets, _ := json.Marshal(nonNil(rec.Packages))
	limits, _ := json.Marshal(rec.Limits)
	calls, _ := json.Marshal(nonNil(rec.HostCalls))
	_, err := s.db.ExecContext(ctx, s.d.q(`INSERT INTO executions (execution_id, owner, kind, skill, version, actor_id, actor_type,
		approved, tier, code_hash, inputs_hash, outputs_hash, session_id, turn, state_before, state_after,
		interpreter, packages, limits, outcome, error, duration_ms, fuel_used,
		memory_peak_bytes, host_calls, host_calls_total, started_at, finished_at, codegen, caller)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		rec.ExecutionID, s.owner, rec.Kind, rec.Skill, rec.Version, rec.ActorID, rec.ActorType,
		rec.Approved, rec.Tier, rec.CodeHash, rec.InputsHash, rec.OutputsHash, rec.SessionID, rec.Turn, rec.StateBefore, rec.StateAfter,
		s.d.json(interp), s.d.json(sets), s.d.json(limits), rec.Outcome, rec.Error, rec.DurationMS, clamp(rec.FuelUsed),
		clamp(rec.MemoryPeakBytes), s.d.json(calls), rec.HostCallsTotal, s.d.time(rec.StartedAt), s.d.timePtr(rec.FinishedAt),
		s.codegen(rec.Codegen), rec.Caller)
	if err != nil {
		return fmt.Errorf("provenance: recording %s: %w", rec.ExecutionID, err)
	}
	return nil
}

// Finish completes rec, written earlier by Begin.
func (s *Store) Finish(ctx context.Context, rec *provenance.Record) error {
	calls, _ := json.Marshal(nonNil(rec.HostCalls))
	res, err := s.db.ExecContext(ctx, s.d.q(`UPDATE executions SET code_hash = ?, codegen = ?, outputs_hash = ?, state_after = ?,
		outcome = ?, error = ?, duration_ms = ?, fuel_used = ?, memory_peak_bytes = ?, host_calls = ?, host_calls_total = ?,
		finished_at = ? WHERE execution_id = ?`),
		rec.CodeHash, s.codegen(rec.Codegen), rec.OutputsHash, rec.StateAfter, rec.Outcome, rec.Error, rec.DurationMS, clamp(rec.FuelUsed), clamp(rec.MemoryPeakBytes),
		s.d.json(calls), rec.HostCallsTotal, s.d.timePtr(rec.FinishedAt), rec.ExecutionID)
	if err != nil {
		return fmt.Errorf("provenance: recording %s: %w", rec.ExecutionID, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("provenance: execution %s was never begun", rec.ExecutionID)
	}
	return nil
}

const columns = `execution_id, kind, skill, version, actor_id, actor_type, approved, tier, code_hash, inputs_hash, outputs_hash,
	session_id, turn, state_before, state_after, interpreter, packages, limits, outcome, error, duration_ms, fuel_used,
	memory_peak_bytes, host_calls, host_calls_total, started_at, finished_at, codegen, caller`

// codegen binds a record's codegen outcome: NULL when it has none.
func (s *Store) codegen(c *provenance.Codegen) any {
	if c == nil {
		return nil
	}
	b, _ := json.Marshal(c)
	return s.d.json(b)
}

func scan(row interface{ Scan(...any) error }) (*provenance.Record, error) {
	var r provenance.Record
	var interp, sets, limits, calls, gen []byte
	var started, finished any
	var fuel, mem int64
	if err := row.Scan(&r.ExecutionID, &r.Kind, &r.Skill, &r.Version, &r.ActorID, &r.ActorType, &r.Approved, &r.Tier,
		&r.CodeHash, &r.InputsHash, &r.OutputsHash, &r.SessionID, &r.Turn, &r.StateBefore, &r.StateAfter,
		&interp, &sets, &limits, &r.Outcome, &r.Error, &r.DurationMS, &fuel, &mem,
		&calls, &r.HostCallsTotal, &started, &finished, &gen, &r.Caller); err != nil {
		return nil, err
	}
	if gen != nil {
		r.Codegen = new(provenance.Codegen)
		if err := json.Unmarshal(gen, r.Codegen); err != nil {
			return nil, fmt.Errorf("provenance: execution %s: %w", r.ExecutionID, err)
		}
	}
	r.FuelUsed, r.MemoryPeakBytes = uint64(fuel), uint64(mem)
	if err := errors.Join(json.Unmarshal(interp, &r.Interpreter), json.Unmarshal(sets, &r.Packages),
		json.Unmarshal(limits, &r.Limits), json.Unmarshal(calls, &r.HostCalls)); err != nil {
		return nil, fmt.Errorf("provenance: execution %s: %w", r.ExecutionID, err)
	}
	var err error
	if r.StartedAt, err = parseTime(started); err != nil {
		return nil, fmt.Errorf("provenance: execution %s: %w", r.ExecutionID, err)
	}
	if finished != nil {
		t, err := parseTime(finished)
		if err != nil {
			return nil, fmt.Errorf("provenance: execution %s: %w", r.ExecutionID, err)
		}
		r.FinishedAt = &t
	}
	return &r, nil
}

// Get returns the record of one execution, or provenance.ErrNotFound.
func (s *Store) Get(ctx context.Context, id string) (*provenance.Record, error) {
	r, err := scan(s.db.QueryRowContext(ctx, s.d.q("SELECT "+columns+" FROM executions WHERE execution_id = ?"), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, provenance.ErrNotFound
	}
	return r, err
}

func (s *Store) where(f provenance.Filter) (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, arg any) { conds, args = append(conds, cond), append(args, arg) }
	if f.Kind != "" {
		add("kind = ?", f.Kind)
	}
	if f.Skill == "-" {
		add("skill = ?", "")
	} else if f.Skill != "" {
		add("skill = ?", f.Skill)
	}
	if f.Outcome != "" {
		add("outcome = ?", f.Outcome)
	}
	if f.ActorID != "" {
		add("actor_id = ?", f.ActorID)
	}
	if f.SessionID != "" {
		add("session_id = ?", f.SessionID)
	}
	if f.IDPrefix != "" {
		add(fmt.Sprintf("substr(execution_id, 1, %d) = ?", len(f.IDPrefix)), f.IDPrefix)
	}
	if !f.Since.IsZero() {
		add("started_at >= ?", s.d.time(f.Since))
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// List returns the records f selects, newest first.
func (s *Store) List(ctx context.Context, f provenance.Filter) ([]*provenance.Record, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	where, args := s.where(f)
	rows, err := s.db.QueryContext(ctx, s.d.q("SELECT "+columns+" FROM executions"+where+
		" ORDER BY started_at DESC, execution_id LIMIT ?"), append(args, f.Limit)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*provenance.Record{}
	for rows.Next() {
		r, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Stats summarises the records f selects per kind and skill.
func (s *Store) Stats(ctx context.Context, f provenance.Filter) ([]provenance.Stats, error) {
	where, args := s.where(f)
	rows, err := s.db.QueryContext(ctx, s.d.q("SELECT kind, skill, outcome, duration_ms FROM executions"+where), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	type key struct{ kind, skill string }
	type acc struct {
		st        provenance.Stats
		durations []float64
	}
	by := map[key]*acc{}
	for rows.Next() {
		var k key
		var outcome string
		var d float64
		if err := rows.Scan(&k.kind, &k.skill, &outcome, &d); err != nil {
			return nil, err
		}
		a := by[k]
		if a == nil {
			a = &acc{st: provenance.Stats{Kind: k.kind, Skill: k.skill, Outcomes: map[string]int{}}}
			by[k] = a
		}
		a.st.Total++
		a.st.Outcomes[outcome]++
		switch outcome {
		case provenance.OutcomeRunning, provenance.OutcomeInterrupted, provenance.OutcomeCanceled, provenance.OutcomeInternal:
		default:
			a.durations = append(a.durations, d)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]provenance.Stats, 0, len(by))
	for _, a := range by {
		if finished := a.st.Total - a.st.Outcomes[provenance.OutcomeRunning]; finished > 0 {
			a.st.SuccessRate = float64(a.st.Outcomes[provenance.OutcomeOK]) / float64(finished)
		}
		sort.Float64s(a.durations)
		a.st.P50MS, a.st.P90MS = percentile(a.durations, 50), percentile(a.durations, 90)
		a.st.P95MS, a.st.P99MS = percentile(a.durations, 95), percentile(a.durations, 99)
		out = append(out, a.st)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Skill < out[j].Skill
	})
	return out, nil
}

// percentile is the nearest-rank percentile of sorted values; 0 for none.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}

func clamp(v uint64) int64 { return int64(min(v, math.MaxInt64)) }

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
