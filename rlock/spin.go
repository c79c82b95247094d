package rlock

import (
	"context"
	"time"
)

// SpinLock is a reentrant lock with the RLock layout whose waiters retry
// with exponential backoff and full jitter instead of subscribing to unlock
// messages (Redisson's RedissonSpinLock [getSpinLock]): for deployments
// where pub/sub is unavailable or unwanted (proxies without pub/sub, very
// many short-lived waiters). As Redisson's, its unlock publishes nothing. It
// excludes Lock and FencedLock holders of the same name.
type SpinLock struct{ h handle }

var _ Locker = (*SpinLock)(nil)

// NewSpinLock returns the spin lock of the given name, retrying on the
// Client's backoff (WithSpinBackoff; default 1 ms doubling up to 128 ms)
// [getSpinLock].
func (c *Client) NewSpinLock(name string) *SpinLock {
	s := &SpinLock{h: newHandle(c, name, kindSpin)}
	s.h.spin = clientBackoff(c)
	return s
}

func clientBackoff(c *Client) backoff {
	if c == nil {
		return defaultBackoff
	}
	return c.opts.spin
}

func (s *SpinLock) handle() *handle {
	if s == nil {
		return nil
	}
	return &s.h
}

// Name returns the lock's name, which is also its Redis key.
func (s *SpinLock) Name() string { return s.handle().lockName() }

// Lock retries until ctx's owner holds the lock, with a watchdog lease.
func (s *SpinLock) Lock(ctx context.Context) error { return s.handle().lock(ctx, 0) }

// LockLease retries until ctx's owner holds the lock (lease <= 0:
// watchdog).
func (s *SpinLock) LockLease(ctx context.Context, lease time.Duration) error {
	return s.handle().lock(ctx, lease)
}

// TryLock retries within wait (<= 0: one attempt); false when the wait ran
// out.
func (s *SpinLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	return s.handle().tryLock(ctx, wait, lease)
}

// Unlock gives back one hold of ctx's owner (ErrNotHeld when it holds
// none); it publishes nothing, as Redisson's spin lock. An ended ctx does
// not stop it.
func (s *SpinLock) Unlock(ctx context.Context) error { return s.handle().unlock(ctx) }

// ForceUnlock deletes the lock whoever holds it (a plain DEL: spin waiters
// need no message) and reports whether there was one.
func (s *SpinLock) ForceUnlock(ctx context.Context) (bool, error) {
	return s.handle().forceUnlockOp(ctx)
}

// IsLocked reports whether anyone holds the lock.
func (s *SpinLock) IsLocked(ctx context.Context) (bool, error) { return s.handle().isLockedOp(ctx) }

// IsHeldByCurrent reports whether ctx's owner holds the lock.
func (s *SpinLock) IsHeldByCurrent(ctx context.Context) (bool, error) {
	return s.handle().isHeldByCurrent(ctx)
}

// HoldCount returns how many times ctx's owner holds the lock.
func (s *SpinLock) HoldCount(ctx context.Context) (int, error) {
	return s.handle().holdCount(ctx, "holdcount")
}

// RemainTTL returns the remaining lease: 0 when not held, NoExpiry without
// expiry.
func (s *SpinLock) RemainTTL(ctx context.Context) (time.Duration, error) {
	return s.handle().remainTTL(ctx)
}
