package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/goredisson/goredisson/internal/transport"
)

// How waits ride out a Redis that fails (down, restarting, failing over).
//
// Redisson retries each command retryAttempts times (default 4), pausing
// retryDelay between tries (default EqualJitterDelay(1 s, 2 s): 0.5-1 s
// before the first retry, 1-2 s before each later one), and then lock(),
// acquire() and await() throw. A wait of goredisson does the same with its
// attempts: it counts the attempts in a row that failed without a reply
// and, past the budget, returns the last Redis error. A reply (the lock
// is held by someone else, say) resets the count.

// RetryPolicy is WithRetry's setting.
type RetryPolicy struct {
	Attempts int           // retries after the first failure; < 0: until ctx ends
	Delay    time.Duration // base of the equal-jitter pause
}

// DefaultRetry is Redisson's: retryAttempts = 4, retryDelay =
// EqualJitterDelay(1 s, 2 s).
var DefaultRetry = RetryPolicy{Attempts: 4, Delay: time.Second}

// untilCtx reports whether failed attempts are retried until ctx ends
// (WithRetry with attempts < 0).
func (r RetryPolicy) untilCtx() bool { return r.Attempts < 0 }

// pause returns the pause before retry n (0 for the first), as Redisson's
// EqualJitterDelay(delay, 2*delay) computes it: half of min(delay*2^n,
// 2*delay), plus a random part up to that half.
func (r RetryPolicy) pause(n int) time.Duration {
	exp := 2 * r.Delay
	if n < 1 {
		exp = r.Delay
	}
	half := exp / 2
	if half <= 0 {
		return 0
	}
	return half + rand.N(half+1)
}

// maxBackoff caps the pause between attempts while Redis fails and waits
// retry until ctx ends (WithRetry with attempts < 0).
const maxBackoff = time.Second

// failures counts the attempts of one wait that failed in a row.
type failures struct {
	policy  *RetryPolicy  // the Client's (or RedLock's), not a copy: memory per waiter
	n       int           // failed attempts in a row
	backoff time.Duration // the growing pause when retrying until ctx ends
}

// reset records an attempt that Redis answered.
func (f *failures) reset() { f.n, f.backoff = 0, 0 }

// failed records a failed attempt and returns the pause before the next
// one, or ok false when the retry budget is spent (err is then the error to
// return).
func (f *failures) failed(err error) (pause time.Duration, ok bool, out error) {
	f.n++
	if f.policy.untilCtx() {
		// Until ctx ends: a pause that doubles from 10 ms up to a second.
		f.backoff = min(max(2*f.backoff, 10*time.Millisecond), maxBackoff)
		return f.backoff, true, nil
	}
	if f.n > f.policy.Attempts {
		return 0, false, fmt.Errorf("gave up after %d retries (WithRetry): %w", f.policy.Attempts, err)
	}
	return f.policy.pause(f.n - 1), true, nil
}

// Pace is the one retry loop's state, which every wait steps through: the
// waiter (message waits), the spin lock's backoff (waiter.spin) and
// RedLock's rounds. It keeps the end of the wait, the attempts in a row
// that failed without a reply (WithRetry's budget), the pause before the
// next attempt and the last Redis error. After each attempt, judge (After)
// reads its error; Bound then cuts the pause to the rest of the wait.
type Pace struct {
	f        failures
	deadline time.Time     // end of the wait; zero: until ctx ends
	pause    time.Duration // before the next attempt
	lastErr  error         // the last attempt's error (nil after a reply)
}

// NewPace returns the pace of a wait that ends at deadline (zero: until
// ctx ends) and retries a failing Redis by policy.
func NewPace(policy *RetryPolicy, deadline time.Time) Pace {
	return Pace{f: failures{policy: policy}, deadline: deadline}
}

// After records an attempt that set pause (the longest sleep before the
// next) and judges its error (see judge).
func (p *Pace) After(pause time.Duration, err error, final bool) error {
	p.pause = pause
	return p.judge(err, final)
}

// judge reads the last attempt's error: a refusal (final) ends the wait,
// the error returned; a Redis failure is retried within the budget
// (WithRetry), after the budget's pause, or ends the wait with the budget's
// error once it is spent; a reply resets the budget and keeps the pause.
func (p *Pace) judge(err error, final bool) error {
	p.lastErr = err
	switch {
	case err == nil:
		p.f.reset()
		return nil
	case final:
		return err
	}
	next, more, gaveUp := p.f.failed(err)
	if !more {
		return gaveUp
	}
	p.pause = next
	return nil
}

// Bound returns the next sleep: the pause, within the rest of the wait (ok
// false when the wait ran out).
func (p *Pace) Bound() (time.Duration, bool) {
	remain, ok := remaining(p.deadline)
	pause := p.pause
	if ok && remain >= 0 && (pause < 0 || remain < pause) {
		pause = remain
	}
	return pause, ok
}

// remaining returns how much of a wait is left (ok false when it ran out);
// a wait without deadline has all the time in the world (-1).
func remaining(deadline time.Time) (time.Duration, bool) {
	if deadline.IsZero() {
		return -1, true
	}
	d := time.Until(deadline)
	return d, d > 0
}

// Sending again what is safe to send again: a settle (idempotent), and a
// release that did not run. Either goes again, after a pause, while the
// clean-up bound lasts (ctx's deadline, and at most cleanupTimeout from
// the first send): a count of sends would give up after a few go-redis
// read timeouts, well inside the bound, during a server stall of a few
// seconds.

// Pauses between two sends of a call sent again (sendAgain): doubled from
// minAgainPause up to maxAgainPause.
const (
	minAgainPause = 10 * time.Millisecond
	maxAgainPause = 250 * time.Millisecond
)

// againBound returns the end of the clean-up bound of a call made with
// ctx from now on: ctx's deadline, at most cleanupTimeout away.
func againBound(ctx context.Context) time.Time {
	until := time.Now().Add(cleanupTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(until) {
		until = d
	}
	return until
}

// sendAgain reports whether o, a call that is safe to send again and got
// no reply (or was refused before it ran), is sent again, after waiting
// the next pause (*pause grows): while the pause ends before until and ctx
// lasts, and the failure may pass (see transport.Op.Transient).
func (c *Core) sendAgain(ctx context.Context, o *transport.Op, until time.Time, pause *time.Duration) bool {
	if !o.Transient() {
		return false
	}
	*pause = min(max(2**pause, minAgainPause), maxAgainPause)
	if time.Now().Add(*pause).After(until) {
		return false
	}
	return c.sleep(ctx, *pause) == nil
}

// sleep waits d, or until ctx ends or the Client closes (ErrClosed).
func (c *Core) sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closing(ctx):
		return ErrClosed
	}
}
