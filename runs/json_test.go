package runs_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy/provenance"
	"github.com/wasmpy/wasmpy/runs"
)

// A record carries the classic spec's names beside its own.
func TestRecordClassicNames(t *testing.T) {
	start := time.Date(2026, 11, 23, 21, 0, 0, 0, time.UTC)
	rec := &provenance.Record{ExecutionID: provenance.NewID(), Skill: "s", Version: "1.2.3", Outcome: "exception", DurationMS: 12.5, StartedAt: start,
		HostCalls: []provenance.HostCall{{Name: "ask_llm"}, {Name: "submit_result"}, {Name: "ask_llm"}, {Name: "read_file"}}}
	b, err := json.Marshal(runs.ClassicRecord(rec))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	require.Equal(t, "s", m["skill"])
	require.Equal(t, "s", m["skill_name"])
	require.Equal(t, "1.2.3", m["skill_version"])
	require.Equal(t, []any{"ask_llm", "read_file"}, m["tool_ids"], "each capability once, in order of first use")
	require.Equal(t, "2026-11-23T21:00:00Z", m["timestamp"])
	require.Equal(t, 12.5, m["execution_time_ms"])
	require.Equal(t, false, m["success"])

	var back provenance.Record
	require.NoError(t, json.Unmarshal(b, &back), "a record reads back from its JSON")
	require.Equal(t, rec.ExecutionID, back.ExecutionID)
	require.Len(t, back.HostCalls, 4)
}
