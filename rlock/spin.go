package rlock

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is the retry schedule of a SpinLock: exponential with full
// jitter. Attempt n waits a random time in [0, min(Max, Initial*2^n)].
type Backoff struct {
	Initial time.Duration // first pause bound (default 1 ms)
	Max     time.Duration // largest pause bound (default 128 ms)
}

// DefaultBackoff is Redisson's default for spin locks: 1 ms doubling up to
// 128 ms.
var DefaultBackoff = Backoff{Initial: time.Millisecond, Max: 128 * time.Millisecond}

// SpinLock is a reentrant lock with the RLock layout whose waiters retry
// with exponential backoff and full jitter instead of subscribing to unlock
// messages [getSpinLock]: for deployments where pub/sub is unavailable or
// unwanted (proxies without pub/sub, very many short-lived waiters). It
// excludes Lock and FencedLock holders of the same name. Every Locker method
// not redefined here is Lock's.
type SpinLock struct {
	*base
	backoff Backoff
}

var _ Locker = (*SpinLock)(nil)

// NewSpinLock returns the spin lock of the given name with the Client's
// backoff (WithSpinBackoff; default DefaultBackoff) [getSpinLock].
func (c *Client) NewSpinLock(name string) *SpinLock {
	return &SpinLock{base: c.NewLock(name), backoff: c.opts.backoff}
}

// Lock retries until ctx's owner holds the lock, with a watchdog lease.
func (s *SpinLock) Lock(ctx context.Context) error {
	return s.LockLease(ctx, 0)
}

// LockLease retries until ctx's owner holds the lock (lease <= 0: watchdog).
func (s *SpinLock) LockLease(ctx context.Context, lease time.Duration) error {
	if s == nil {
		return (*Lock)(nil).LockLease(ctx, lease)
	}
	_, err := s.base.tryWith("lock", ctx, -1, lease, s.base.attempt, &s.backoff)
	return err
}

// TryLock retries within wait (0: once; < 0: until held or ctx done).
func (s *SpinLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	if s == nil {
		return (*Lock)(nil).TryLock(ctx, wait, lease)
	}
	return s.base.tryWith("trylock", ctx, wait, lease, s.base.attempt, &s.backoff)
}

// spinAcquire retries try with backoff and full jitter until it holds, the
// wait runs out (false, nil, or the last Redis error) or ctx ends. A pause
// never outlasts the TTL the last attempt saw.
func (c *Client) spinAcquire(ctx context.Context, field string, wait, lease time.Duration, try attemptFunc, b Backoff) (bool, error) {
	deadline, err := c.startWait(ctx, wait)
	if err != nil {
		return false, err
	}
	bound := b.Initial
	var lastErr error
	for first := true; ; first = false {
		held, ttl, err := try(ctx, field, lease)
		switch {
		case held:
			return true, nil
		case err != nil && (first || ctx.Err() != nil || c.closed.Load()):
			return false, c.ctxOr(ctx, err)
		}
		lastErr = err
		if wait == 0 {
			return false, nil
		}
		pause := rand.N(bound + 1)
		bound = min(2*bound, b.Max)
		if err == nil && ttl >= 0 {
			pause = min(pause, ttl)
		}
		if wait > 0 {
			remain := time.Until(deadline)
			if remain <= 0 {
				return false, lastErr
			}
			pause = min(pause, remain)
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false, c.ctxOr(ctx, ctx.Err())
		}
		if c.closed.Load() {
			return false, ErrClosed
		}
	}
}
