package rlock

import (
	"context"
	"time"
)

// Locker is the contract every lock of this package keeps (Redisson's
// RLock). Lease: <= 0 is a watchdog lease (the Client's watchdog timeout,
// renewed every third of it while held), > 0 a fixed one, never renewed.
// Wait: <= 0 is one attempt (Redisson's tryLock(-1, lease)); Lock and
// LockLease wait until held. A lease or wait between 0 and 1 ms is
// ErrInvalidArgument. A ctx deadline or cancellation ends a wait with ctx's
// error and leaves nothing behind; Redis failing past the retry budget
// (WithRetry) ends it with the Redis error. Owner: ctx's owner (ctxowner),
// else the calling goroutine; an owner's acquisitions count up, its Unlocks
// down, the last one releases.
type Locker interface {
	Name() string                                                         // the lock's name
	Lock(ctx context.Context) error                                       // [lock()]
	LockLease(ctx context.Context, lease time.Duration) error             // [lock(leaseTime)]
	TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) // [tryLock(wait, lease)]: false, nil when the wait ran out
	Unlock(ctx context.Context) error                                     // [unlock()]: cleanup, an ended ctx does not stop it
	ForceUnlock(ctx context.Context) (bool, error)                        // [forceUnlock()]
	IsLocked(ctx context.Context) (bool, error)                           // [isLocked()]
	IsHeldByCurrent(ctx context.Context) (bool, error)                    // [isHeldByCurrentThread()]
	HoldCount(ctx context.Context) (int, error)                           // [getHoldCount()]
	RemainTTL(ctx context.Context) (time.Duration, error)                 // [remainTimeToLive()]: 0 when not held
}

// Lock is a single-key lock: every kind Redisson returns as RLock is a
// *Lock, made by its kind's constructor, which says how that kind waits and
// wakes. NewLock's is a hash (key: the name, field "<client id>:<owner>",
// value: hold count); an unlock publishes "0" on
// redisson_lock__channel:{name}, which wakes the waiter blocked longest in
// each client. A Lock is a handle that many goroutines may share.
type Lock struct{ h handle }

var _ Locker = (*Lock)(nil)

// NewLock returns the reentrant lock of the given name [getLock]. An empty
// name is reported by the lock's methods as ErrInvalidArgument.
func (c *Client) NewLock(name string) *Lock {
	return newLock(c, name, kindLock)
}

// NewNonReentrantLock returns the non-reentrant lock of the given name
// [getNonReentrantLock]: the Lock layout and messages, so it excludes Lock
// holders of the same name, but its holder taking it again gets ErrReentry
// instead of a second hold.
func (c *Client) NewNonReentrantLock(name string) *Lock {
	return newLock(c, name, kindNonReentrant)
}

// newLock returns a lock of kind k.
func newLock(c *Client, name string, k kind) *Lock {
	return &Lock{h: newHandle(c, name, k)}
}

// handle returns the lock's handle (nil-safe).
func (l *Lock) handle() *handle {
	if l == nil {
		return nil
	}
	return &l.h
}

// Name returns the lock's name: its Redis key unless WithNameMapper maps it.
func (l *Lock) Name() string { return l.handle().lockName() }

// Lock waits until ctx's owner holds the lock, with a watchdog lease.
func (l *Lock) Lock(ctx context.Context) error { return l.handle().lock(ctx, 0) }

// LockLease waits until ctx's owner holds the lock, with the given lease
// (<= 0: watchdog).
func (l *Lock) LockLease(ctx context.Context, lease time.Duration) error {
	return l.handle().lock(ctx, lease)
}

// TryLock takes the lock within wait (<= 0: one attempt); false with a nil
// error when the wait ran out.
func (l *Lock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	return l.handle().tryLock(ctx, wait, lease)
}

// Unlock gives back one hold of ctx's owner (ErrNotHeld when it holds none);
// the last one releases the lock and wakes a waiter. It is cleanup: an ended
// ctx does not stop it (its own 5 s bound); nil means the release took effect.
func (l *Lock) Unlock(ctx context.Context) error { return l.handle().unlock(ctx) }

// ForceUnlock deletes the lock whoever holds it, wakes a waiter, and reports
// whether there was a lock; holders learn of it as LostContext says.
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) {
	return l.handle().forceUnlockOp(ctx)
}

// IsLocked reports whether anyone holds the lock.
func (l *Lock) IsLocked(ctx context.Context) (bool, error) { return l.handle().isLockedOp(ctx) }

// IsHeldByCurrent reports whether ctx's owner holds the lock.
func (l *Lock) IsHeldByCurrent(ctx context.Context) (bool, error) {
	return l.handle().isHeldByCurrent(ctx)
}

// HoldCount returns how many times ctx's owner holds the lock (0: not
// held).
func (l *Lock) HoldCount(ctx context.Context) (int, error) {
	return l.handle().holdCount(ctx, "holdcount")
}

// RemainTTL returns the remaining lease: 0 when not held, NoExpiry when the
// key has no expiry.
func (l *Lock) RemainTTL(ctx context.Context) (time.Duration, error) {
	return l.handle().remainTTL(ctx)
}
