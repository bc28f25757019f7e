package runs

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/skills"
)

// ExecutionJSON is an Execution as JSON, the one shape of a skill run's
// answer for the service, `wasmpy skill run --json` and Go callers that
// marshal it: the output at the top, then the run (stdout, stderr, limits
// used... without a second copy of the output), the provenance, and the
// error when it failed. Clients may decode an answer into it.
type ExecutionJSON struct {
	Error      *skills.Error   `json:"error,omitempty"`
	Output     json.RawMessage `json:"output"`
	Run        *wasmpy.Result  `json:"run"`
	Provenance *RecordJSON     `json:"provenance"`
}

// MarshalJSON gives {"output", "run", "provenance"} and "error" when the
// execution failed; output is null when the handler returned nothing valid
// to show (an invalid output is shown).
func (x *Execution) MarshalJSON() ([]byte, error) {
	j := ExecutionJSON{Error: x.Error, Output: json.RawMessage("null"), Provenance: ClassicRecord(x.Record)}
	if x.Result != nil {
		run := *x.Result
		if len(run.Output) > 0 {
			j.Output = run.Output
		}
		run.Output = nil // omitted: it is "output" above
		j.Run = &run
	}
	return json.Marshal(j)
}

// RecordJSON is a provenance record as the service answers it: its fields
// plus the names of the classic Code Executor spec, so a client written to
// that spec reads them unchanged.
type RecordJSON struct {
	*provenance.Record
	SkillName       string    `json:"skill_name"`        // = skill
	SkillVersion    string    `json:"skill_version"`     // = version
	ToolIDs         []string  `json:"tool_ids"`          // the capabilities called, in order of first use, submit_result aside
	Timestamp       time.Time `json:"timestamp"`         // = started_at
	ExecutionTimeMS float64   `json:"execution_time_ms"` // = duration_ms
	Success         bool      `json:"success"`           // outcome is ok
}

// ClassicRecord is r with the classic names; nil for nil.
func ClassicRecord(r *provenance.Record) *RecordJSON {
	if r == nil {
		return nil
	}
	tools := []string{}
	for _, c := range r.HostCalls {
		if c.Name != string(wasmpy.SubmitResult) && !slices.Contains(tools, c.Name) {
			tools = append(tools, c.Name)
		}
	}
	return &RecordJSON{Record: r, SkillName: r.Skill, SkillVersion: r.Version, ToolIDs: tools,
		Timestamp: r.StartedAt, ExecutionTimeMS: r.DurationMS, Success: r.Outcome == provenance.OutcomeOK}
}
