package wasmpy

import (
	"encoding/json"

	"github.com/wasmpy/wasmpy/hostfuncs"
	"github.com/wasmpy/wasmpy/internal/engine"
	"github.com/wasmpy/wasmpy/workspace"
)

// HostCall is one capability call a run made.
type HostCall struct {
	Name       string  `json:"name"`
	DurationMS float64 `json:"duration_ms"`
	OK         bool    `json:"ok"`
	Error      string  `json:"error,omitempty"` // the Python exception class, when not OK
}

// Result is the one record of a run, for Go callers and, as JSON, for
// `wasmpy exec --json`, the HTTP service and provenance alike.
type Result struct {
	ExitCode        int             `json:"exit_code"`
	Stdout          string          `json:"stdout"`
	Stderr          string          `json:"stderr"`
	StdoutTruncated bool            `json:"stdout_truncated"`
	StderrTruncated bool            `json:"stderr_truncated"`
	Output          json.RawMessage `json:"output,omitempty"` // what the code passed to submit_result; null if nothing
	Error           *Error          `json:"error"`            // nil when the run succeeded
	DurationMS      float64         `json:"duration_ms"`
	// QueuedMS is how long the run waited for a slot (Config.MaxConcurrent)
	// before it started; DurationMS does not count it.
	QueuedMS        float64    `json:"queued_ms"`
	MemoryPeakBytes uint64     `json:"memory_peak_bytes"`
	FuelUsed        uint64     `json:"fuel_used"`
	HostCalls       []HostCall `json:"host_calls"`
	// HostCallsTotal counts every host call; HostCalls keeps the first 10,000.
	HostCallsTotal int                    `json:"host_calls_total"`
	Files          []workspace.FileChange `json:"files"` // what the run wrote to its workspace overlay
	LLM            hostfuncs.LLMUsage     `json:"llm"`   // what ask_llm spent
	// Images are the image files among Files, with their data within
	// bounds (MaxImages, MaxImageBytes, MaxImagesBytes).
	Images []Image `json:"images,omitempty"`
	// HTTP are the requests http_request made (each redirect one), refused
	// ones included.
	HTTP []hostfuncs.HTTPRecord `json:"http,omitempty"`
	// Packages are the package sets the run could import from.
	Packages []PackageSet `json:"packages"`
	// Session describes the turn, for a run of a Session; nil otherwise.
	Session *SessionTurn `json:"session,omitempty"`
	// Tier is the trust tier the run had (Job.Tier).
	Tier string `json:"tier"`
	// Engine ran the interpreter: wazero or wasmtime (Config.Engine).
	Engine string `json:"engine"`

	workspace *workspace.Workspace
}

// File returns the contents of a file the run wrote to its workspace.
func (r *Result) File(path string) ([]byte, bool) {
	if r.workspace == nil {
		return nil, false
	}
	return r.workspace.OverlayFile(path)
}

// Removed lists the workspace paths the run removed or renamed away: files
// and directories of the stable directory (Job.Workspace) it hid, each
// with everything under it. A caller that keeps a run's work in that
// directory removes these, then writes Files.
func (r *Result) Removed() []string {
	if r.workspace == nil {
		return nil
	}
	return r.workspace.Removed()
}

// OK reports whether the run succeeded.
func (r *Result) OK() bool { return r.Error == nil }

// Err returns the run's failure as an error (an *Error), or nil if it
// succeeded: `if err := res.Err(); err != nil`.
func (r *Result) Err() error {
	if r.Error == nil {
		return nil
	}
	return r.Error
}

func newResult(out *engine.Outcome) *Result {
	calls := make([]HostCall, len(out.HostCalls))
	for i, c := range out.HostCalls {
		calls[i] = HostCall(c)
	}
	return &Result{
		ExitCode:        out.ExitCode,
		Stdout:          string(out.Stdout),
		Stderr:          string(out.Stderr),
		StdoutTruncated: out.StdoutTruncated,
		StderrTruncated: out.StderrTruncated,
		Output:          json.RawMessage("null"),
		Error:           newError(out.Failure),
		DurationMS:      float64(out.Duration.Microseconds()) / 1000,
		MemoryPeakBytes: out.MemoryPeak,
		FuelUsed:        out.FuelUsed,
		HostCalls:       calls,
		HostCallsTotal:  out.HostCallsTotal,
	}
}
