package runs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wasmpy/wasmpy"
	"github.com/wasmpy/wasmpy/runs"
	"github.com/wasmpy/wasmpy/skills"
	"github.com/wasmpy/wasmpy/tiers"
)

func codeOf(t *testing.T, err error) string {
	t.Helper()
	var se *skills.Error
	require.True(t, errors.As(err, &se), "want a *skills.Error, got %v", err)
	return se.Code
}

// TestAdmission holds the one slot with a real run, then checks the queue,
// busy, a shortened timeout, a caller that goes away, and the counters.
func TestAdmission(t *testing.T) {
	ex, _ := recordingExecutor(t)
	adm, err := runs.NewAdmission(runs.AdmissionConfig{MaxConcurrent: 1, MaxQueue: 1, RequestTimeout: time.Minute})
	require.NoError(t, err)
	ctx := context.Background()

	hold, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := adm.Run(ctx, 0, func(ctx context.Context) (*runs.Execution, error) {
			close(hold)
			<-release
			return ex.Exec(ctx, runs.ExecRequest{Code: "print(1)"})
		})
		first <- err
	}()
	<-hold
	queuedCtx, cancelQueued := context.WithCancel(ctx)
	queued := make(chan error, 1)
	go func() {
		_, err := adm.Run(queuedCtx, 0, func(context.Context) (*runs.Execution, error) { panic("a canceled request ran") })
		queued <- err
	}()
	require.Eventually(t, func() bool { return adm.Stats().Queued == 1 }, 20*time.Second, 5*time.Millisecond)

	_, err = adm.Run(ctx, 0, nil)
	require.Equal(t, runs.CodeBusy, codeOf(t, err))
	cancelQueued()
	require.Equal(t, runs.CodeCanceled, codeOf(t, <-queued))
	_, err = adm.Run(ctx, time.Millisecond, nil) // waits in the queue past its own deadline
	require.Equal(t, runs.CodeTimeout, codeOf(t, err))

	close(release)
	require.NoError(t, <-first)
	x, err := adm.Run(ctx, 0, func(ctx context.Context) (*runs.Execution, error) {
		return ex.Exec(ctx, runs.ExecRequest{Code: "1/0"})
	})
	require.NoError(t, err)
	require.Equal(t, wasmpy.KindException, x.Error.Kind)

	st := adm.Stats()
	require.Equal(t, int64(1), st.Rejected)
	require.Equal(t, 0, st.InFlight)
	require.Equal(t, []runs.ExecutionCount{{Skill: "", Outcome: "exception", Count: 1}, {Skill: "", Outcome: "ok", Count: 1}}, st.Executions)
}

// TestExecLimits: what raw code gets is the lower, field by field, of what
// it asked, its tier's limits and the ceilings; asking for more is refused.
func TestExecLimits(t *testing.T) {
	ex := testExecutor(t)
	testing_, err := ex.Tiers().Lookup(tiers.Testing)
	require.NoError(t, err)
	ceil := wasmpy.Limits{Timeout: 5 * time.Second, Memory: 64 << 20}
	lim, err := ex.ExecLimits(testing_, runs.RequestedLimits{TimeoutMS: 200, Fuel: 1000}, ceil)
	require.NoError(t, err)
	require.Equal(t, wasmpy.Limits{Timeout: 200 * time.Millisecond, Memory: 64 << 20, Fuel: 1000}, lim)
	lim, err = ex.ExecLimits(testing_, runs.RequestedLimits{})
	require.NoError(t, err)
	require.Equal(t, testing_.Limits, lim, "nothing asked, no ceiling: the tier's")
	for _, r := range []runs.RequestedLimits{{TimeoutMS: 6000}, {TimeoutMS: -1}, {MemoryBytes: 1 << 30}} {
		_, err := ex.ExecLimits(testing_, r, ceil)
		require.Equal(t, runs.CodeBadRequest, codeOf(t, err), "%+v", r)
	}
	_, err = ex.ExecLimits(testing_, runs.RequestedLimits{TimeoutMS: 30_000})
	require.ErrorContains(t, err, "limits.timeout_ms: want 1 to 20000", "above the tier's")
}
