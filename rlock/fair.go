package rlock

import (
	"context"
	"time"
)

// FairLock is a reentrant lock that waiters acquire in the order they asked
// for it (Redisson's RedissonFairLock [getFairLock]). It has the RLock hash
// plus Redisson's waiter queue redisson_lock_queue:{name} and timeouts
// redisson_lock_timeout:{name}; an unlock wakes only the waiter at the head
// of the queue, on its own channel redisson_lock__channel:{name}:<field>.
// Java and Go waiters share one queue, in arrival order.
//
// The queue's timeouts follow Redisson's arithmetic. A waiter's
// threadWaitTime is its TryLock wait, or the Client's fair lock wait timeout
// for Lock (WithFairLockWaitTimeout, default 5 minutes): a waiter keeps its
// place for that long past its turn, then it is purged. A goredisson waiter
// also brings its own timeout up to the chain with every attempt (the
// timeout of the waiter ahead of it, or now for the head, plus its
// threadWaitTime), at least every third of its threadWaitTime, so it is
// never purged while it lives, however long the holders ahead of it hold,
// provided every client pulls the queue in by the same threadWaitTime
// (Redisson's default and goredisson's are both 5 minutes). A waiter that gives up
// (its wait ran out, its ctx ended) leaves the queue at once. A single
// attempt (TryLock with wait <= 0) never joins the queue: it takes the lock
// only when nobody is queued.
type FairLock struct{ h handle }

var _ Locker = (*FairLock)(nil)

// NewFairLock returns the fair lock of the given name [getFairLock].
func (c *Client) NewFairLock(name string) *FairLock {
	f := &FairLock{h: newHandle(c, name, kindFair)}
	f.h.fairWait = defaultFairLockWaitTimeout
	if c != nil {
		f.h.fairWait = c.opts.fairWait
	}
	return f
}

func (f *FairLock) handle() *handle {
	if f == nil {
		return nil
	}
	return &f.h
}

// Name returns the lock's name, which is also its Redis key.
func (f *FairLock) Name() string { return f.handle().lockName() }

// Lock waits in the queue until ctx's owner holds the lock, with a
// watchdog lease.
func (f *FairLock) Lock(ctx context.Context) error { return f.handle().lock(ctx, 0) }

// LockLease waits in the queue until ctx's owner holds the lock (lease <=
// 0: watchdog).
func (f *FairLock) LockLease(ctx context.Context, lease time.Duration) error {
	return f.handle().lock(ctx, lease)
}

// TryLock waits in the queue up to wait and leaves it when the wait runs
// out; wait <= 0 makes one attempt without queueing.
func (f *FairLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	return f.handle().tryLock(ctx, wait, lease)
}

// Unlock gives back one hold of ctx's owner; the last one deletes the lock
// and wakes the waiter at the head of the queue. ErrNotHeld when the owner
// holds none (the head waiter is woken all the same when nobody holds the
// lock, as Redisson does). An ended ctx does not stop it.
func (f *FairLock) Unlock(ctx context.Context) error { return f.handle().unlock(ctx) }

// ForceUnlock deletes the lock whoever holds it and wakes the waiter at the
// head of the queue; the queue itself is kept.
func (f *FairLock) ForceUnlock(ctx context.Context) (bool, error) {
	return f.handle().forceUnlockOp(ctx)
}

// IsLocked reports whether anyone holds the lock.
func (f *FairLock) IsLocked(ctx context.Context) (bool, error) { return f.handle().isLockedOp(ctx) }

// IsHeldByCurrent reports whether ctx's owner holds the lock.
func (f *FairLock) IsHeldByCurrent(ctx context.Context) (bool, error) {
	return f.handle().isHeldByCurrent(ctx)
}

// HoldCount returns how many times ctx's owner holds the lock.
func (f *FairLock) HoldCount(ctx context.Context) (int, error) {
	return f.handle().holdCount(ctx, "holdcount")
}

// RemainTTL returns the remaining lease: 0 when not held, NoExpiry without
// expiry.
func (f *FairLock) RemainTTL(ctx context.Context) (time.Duration, error) {
	return f.handle().remainTTL(ctx)
}
