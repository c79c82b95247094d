package rlock

import (
	"context"
	"time"

	"github.com/goredisson/goredisson/internal/engine"
)

// Locker is the contract every lock keeps (Redisson's RLock; docs/api.md).
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

// Lock is a single-key lock: every kind Redisson returns as RLock.
type Lock struct{ h handle }

var _ Locker = (*Lock)(nil)

// NewLock returns the reentrant lock of the given name [getLock].
func (c *Client) NewLock(name string) *Lock {
	return newLock(c, name, engine.KindLock)
}

// NewNonReentrantLock is NewLock without re-entry [getNonReentrantLock].
func (c *Client) NewNonReentrantLock(name string) *Lock {
	return newLock(c, name, engine.KindNonReentrant)
}

// newLock returns a lock of kind k.
func newLock(c *Client, name string, k engine.Kind) *Lock {
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

// LockLease waits until ctx's owner holds the lock (lease <= 0: watchdog).
func (l *Lock) LockLease(ctx context.Context, lease time.Duration) error {
	return l.handle().lock(ctx, lease)
}

// TryLock takes the lock within wait (<= 0: one attempt); false if not.
func (l *Lock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	return l.handle().tryLock(ctx, wait, lease)
}

// Unlock gives back one hold of ctx's owner; the last releases the lock.
func (l *Lock) Unlock(ctx context.Context) error { return l.handle().unlock(ctx) }

// ForceUnlock deletes the lock whoever holds it; true if there was one.
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

// RemainTTL returns the remaining lease (0: not held; NoExpiry: no expiry).
func (l *Lock) RemainTTL(ctx context.Context) (time.Duration, error) {
	return l.handle().remainTTL(ctx)
}
