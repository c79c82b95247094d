package rlock

import (
	"context"
	"time"
)

// Locker is satisfied by every lock type of this package.
//
// Lease: lease <= 0 asks for a watchdog-managed lease (the key lives the
// Client's watchdog timeout, 30 s by default, and is renewed every third of
// it while held); lease > 0 is a fixed lease that is never renewed; a lease
// below 1 ms is ErrInvalidArgument.
//
// Wait (TryLock): wait <= 0 makes one attempt, as Redisson's tryLock(-1,
// lease) does; wait >= 1 ms waits up to wait; 0 < wait < 1 ms is
// ErrInvalidArgument. Lock and LockLease wait until held or ctx ends.
//
// A ctx deadline or cancellation always ends a wait: the call returns an
// error that errors.Is ctx's error, and leaves nothing behind (no waiter, no
// subscription, no hold taken in a race with the cancellation).
//
// Owner: ctx's owner (package ctxowner) if it carries one, else the calling
// goroutine. The same owner acquiring again increments its hold count;
// each Unlock decrements it; the last one releases the lock.
type Locker interface {
	// Name returns the lock's name.
	Name() string
	// Lock waits until ctx's owner holds the lock, with a watchdog lease
	// [lock()].
	Lock(ctx context.Context) error
	// LockLease waits until ctx's owner holds the lock, with the given lease
	// [lock(leaseTime)].
	LockLease(ctx context.Context, lease time.Duration) error
	// TryLock tries to take the lock within wait; false with a nil error
	// when the wait ran out [tryLock(wait, lease)].
	TryLock(ctx context.Context, wait, lease time.Duration) (bool, error)
	// Unlock gives back one hold of ctx's owner; ErrNotHeld if it holds
	// none [unlock()]. It is cleanup: an ended ctx does not stop it.
	Unlock(ctx context.Context) error
	// ForceUnlock deletes the lock whoever holds it and wakes waiters; it
	// reports whether a lock existed [forceUnlock()].
	ForceUnlock(ctx context.Context) (bool, error)
	// IsLocked reports whether anyone holds the lock [isLocked()].
	IsLocked(ctx context.Context) (bool, error)
	// IsHeldByCurrent reports whether ctx's owner holds the lock
	// [isHeldByCurrentThread()].
	IsHeldByCurrent(ctx context.Context) (bool, error)
	// HoldCount returns how many times ctx's owner holds the lock
	// [getHoldCount()].
	HoldCount(ctx context.Context) (int, error)
	// RemainTTL returns the remaining lease: 0 when the lock is not held,
	// NoExpiry when its key has no expiry [remainTimeToLive()].
	RemainTTL(ctx context.Context) (time.Duration, error)
}

// Lock is a single-key lock: every kind Redisson returns as RLock (getLock,
// getFairLock, getSpinLock, getNonReentrantLock, the two sides of
// getReadWriteLock) is a *Lock, made by the constructor of its kind, which
// documents how that kind waits and wakes. Each kind keeps Redisson's layout
// for it; for NewLock it is a Redis hash: key = the lock's name, field =
// "<client id>:<owner id>", value = hold count. Waiters sleep on
// redisson_lock__channel:{name}; the last unlock publishes "0", which wakes
// one waiter in each client, the one blocked longest in its wait. A new
// waiter that finds waiters of its own Client on the lock queues behind them
// before its first attempt (for at most 100 ms), so the owners of one Client
// take the lock in turn; between clients, as in Redisson, whoever comes first
// takes it.
//
// A Lock value is only a handle: many goroutines may share it, each acting
// for its own owner.
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

// Name returns the lock's name, which is also its Redis key.
func (l *Lock) Name() string { return l.handle().lockName() }

// Lock waits until ctx's owner holds the lock, with a watchdog lease.
func (l *Lock) Lock(ctx context.Context) error { return l.handle().lock(ctx, 0) }

// LockLease waits until ctx's owner holds the lock. lease <= 0 is a
// watchdog lease; lease > 0 a fixed one.
func (l *Lock) LockLease(ctx context.Context, lease time.Duration) error {
	return l.handle().lock(ctx, lease)
}

// TryLock tries to take the lock for ctx's owner within wait (<= 0: one
// attempt). It returns false with a nil error when the wait ran out.
func (l *Lock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	return l.handle().tryLock(ctx, wait, lease)
}

// Unlock gives back one hold of ctx's owner; the last one deletes the lock,
// publishes the unlock message and stops the watchdog for it. ErrNotHeld
// when the owner holds none (nothing changes then). An ended ctx does not
// stop it: it runs bounded by a timeout of its own (5 s) and returns nil
// when the release took effect.
func (l *Lock) Unlock(ctx context.Context) error { return l.handle().unlock(ctx) }

// ForceUnlock deletes the lock whoever holds it and wakes a waiter. It
// reports whether there was a lock. Holders learn of the loss at their next
// renewal (LostContext).
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

// RemainTTL returns the remaining lease of the lock: 0 when it is not held,
// NoExpiry when its key has no expiry.
func (l *Lock) RemainTTL(ctx context.Context) (time.Duration, error) {
	return l.handle().remainTTL(ctx)
}
