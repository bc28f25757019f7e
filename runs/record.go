package runs

import (
	"context"
	"errors"
	"time"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/provenance"
)

// NewRecord is the record of a run about to start on sb with limits (as
// applied), of kind (provenance.KindSkill, KindExec...), with Outcome
// running: Begin it, run, CompleteRecord it, Finish it. The Executor keeps
// its records so; `wasmpy exec --record` does too.
func NewRecord(sb *wasmpy.Sandbox, kind string, limits wasmpy.Limits) *provenance.Record {
	return &provenance.Record{ExecutionID: provenance.NewID(), Kind: kind,
		Interpreter: provenance.Interpreter(sb.Interpreter()), Packages: packageSets(sb.Packages()),
		Limits: recordLimits(limits), Outcome: provenance.OutcomeRunning,
		StartedAt: now(), HostCalls: []provenance.HostCall{}}
}

// CompleteRecord fills rec from how the run went: res and runErr as
// Sandbox.Run returned them, ctx the run's. The outcome is ok, the run's
// error.kind, or (runErr) timeout, canceled or internal.
func CompleteRecord(ctx context.Context, rec *provenance.Record, res *wasmpy.Result, runErr error) {
	finished := now()
	rec.FinishedAt = &finished
	if runErr != nil {
		switch rec.Error = runErr.Error(); {
		case errors.Is(runErr, context.DeadlineExceeded): // the caller's deadline passed before the run began
			rec.Outcome = string(wasmpy.KindTimeout)
		case ctx.Err() != nil:
			rec.Outcome = provenance.OutcomeCanceled
		default:
			rec.Outcome = string(wasmpy.KindInternal)
		}
		return
	}
	rec.DurationMS, rec.FuelUsed, rec.MemoryPeakBytes = res.DurationMS, res.FuelUsed, res.MemoryPeakBytes
	rec.HostCalls, rec.HostCallsTotal = hostCalls(res.HostCalls), res.HostCallsTotal
	rec.Outcome, rec.Error = provenance.OutcomeOK, ""
	if res.Error != nil {
		rec.Outcome, rec.Error = string(res.Error.Kind), recordError(res.Error)
		return
	}
	if h, err := provenance.Hash(res.Output); err == nil { // the code finished: hash what it handed back
		rec.OutputsHash = h
	}
}

// recordLimits are the limits a run was given, as its record keeps them.
func recordLimits(l wasmpy.Limits) provenance.Limits {
	return provenance.Limits{TimeoutMS: l.Timeout.Milliseconds(), MemoryBytes: l.Memory, OutputBytes: l.Output, Fuel: l.Fuel}
}

// recordError describes a failure for provenance without the exception's
// message, which may quote the inputs.
func recordError(f *wasmpy.Error) string {
	if f.Type != "" {
		return f.Type
	}
	return f.Message
}

// now is the time a record holds: UTC, to the microsecond, which every
// store keeps.
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

func packageSets(sets []wasmpy.PackageSet) []provenance.PackageSet {
	out := make([]provenance.PackageSet, len(sets))
	for i, s := range sets {
		out[i] = provenance.PackageSet(s)
	}
	return out
}

func hostCalls(calls []wasmpy.HostCall) []provenance.HostCall {
	out := make([]provenance.HostCall, len(calls))
	for i, c := range calls {
		out[i] = provenance.HostCall(c)
	}
	return out
}
