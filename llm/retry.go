package llm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// RetryPolicy says how often and how patiently a failed chat request that
// may pass next time (Error.Retryable) is sent again.
type RetryPolicy struct {
	Retries    int           // retries after the first request (0 = none)
	Backoff    time.Duration // the delay before the first retry, doubled for each next one
	MaxBackoff time.Duration // the cap on one delay (0 = DefaultMaxBackoff)
}

// Retrying describes a retry about to happen, for a progress line:
// "retry 2/4 in 1.8s: status 503".
type Retrying struct {
	Retry, Retries int           // 1-based: this is retry Retry of at most Retries
	Delay          time.Duration // the wait before it
	Err            *Error        // the failure that caused it
}

// Cause is the failure in a few words: "503", "timed out", "connection refused".
func (r Retrying) Cause() string {
	if r.Err.StatusCode != 0 {
		return fmt.Sprint(r.Err.StatusCode)
	}
	return r.Err.Message
}

// ChatRetry is Chat with retries of retryable failures, with exponential
// backoff and jitter. A retry whose delay would end after ctx's deadline is
// not made: the failure is returned at once rather than after a wait that
// cannot help. notify, if not nil, hears of each retry before its delay.
// It returns how many retries were made.
func (c *Client) ChatRetry(ctx context.Context, req ChatRequest, p RetryPolicy, notify func(Retrying)) (*ChatResponse, int, error) {
	for retry := 0; ; retry++ {
		resp, err := c.Chat(ctx, req)
		if err == nil {
			return resp, retry, nil
		}
		delay, ok := nextRetry(ctx, p, retry, err)
		if !ok {
			return nil, retry, err
		}
		if notify != nil {
			var ce *Error
			errors.As(err, &ce)
			notify(Retrying{Retry: retry + 1, Retries: p.Retries, Delay: delay, Err: ce})
		}
		if err := sleep(ctx, delay); err != nil {
			return nil, retry, &Error{Message: "LLM request canceled", Err: err}
		}
	}
}

// Wait decides whether failure err of request n (0-based) is retried, as
// ChatRetry would, and if so waits the delay. It reports false, at once,
// when the request is not to be retried or ctx ended during the wait.
func (p RetryPolicy) Wait(ctx context.Context, n int, err error) bool {
	delay, ok := nextRetry(ctx, p, n, err)
	return ok && sleep(ctx, delay) == nil
}

// nextRetry decides whether failure err of request n (0-based) is retried,
// and after what delay.
func nextRetry(ctx context.Context, p RetryPolicy, n int, err error) (time.Duration, bool) {
	var ce *Error
	if !errors.As(err, &ce) || !ce.Retryable || n >= p.Retries || ctx.Err() != nil {
		return 0, false
	}
	ceil := p.MaxBackoff
	if ceil <= 0 {
		ceil = DefaultMaxBackoff
	}
	delay := Backoff(p.Backoff, ceil, n)
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= delay {
		return 0, false
	}
	return delay, true
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Backoff is the delay before retry n (0-based): base doubled n times,
// capped at ceil, drawn from [d/2, d] so that clients do not retry in step.
func Backoff(base, ceil time.Duration, n int) time.Duration {
	d := ceil
	if n < 32 && base<<n > 0 && base<<n < ceil {
		d = base << n
	}
	return d/2 + rand.N(d/2+1)
}
