package rlock

import (
	"context"
	"time"
)

// ReadWriteLock is Redisson's RReadWriteLock [getReadWriteLock]: many
// readers or one writer, both sides reentrant per owner, in one hash with a
// "mode" field ("read" or "write"). The write owner may also take the read
// lock (a downgrade: after its last write unlock it keeps reading); a reader
// cannot upgrade (its write attempt waits like anyone else's). Each read
// hold has its own timeout key, so one stuck reader's lease expires on its
// own while others keep reading. Waiters of both sides sleep on
// redisson_rwlock:{name}: a read unlock that frees the lock publishes "0"
// (wakes one), a write unlock "1" (wakes all, so every waiting reader goes
// in at once).
type ReadWriteLock struct {
	c    *Client
	name string
}

// NewReadWriteLock returns the read-write lock of the given name
// [getReadWriteLock].
func (c *Client) NewReadWriteLock(name string) *ReadWriteLock {
	return &ReadWriteLock{c: c, name: name}
}

// ReadLock returns the shared side [readLock()].
func (rw *ReadWriteLock) ReadLock() Locker { return rw.side(kindRead) }

// WriteLock returns the exclusive side [writeLock()].
func (rw *ReadWriteLock) WriteLock() Locker { return rw.side(kindWrite) }

func (rw *ReadWriteLock) side(k kind) *rwSide {
	if rw == nil {
		return &rwSide{h: newHandle(nil, "", k)}
	}
	return &rwSide{h: newHandle(rw.c, rw.name, k)}
}

// rwSide is one side of a ReadWriteLock; ReadLock and WriteLock describe
// how each behaves.
type rwSide struct{ h handle }

func (s *rwSide) Name() string                   { return s.h.lockName() }
func (s *rwSide) Lock(ctx context.Context) error { return s.h.lock(ctx, 0) }
func (s *rwSide) LockLease(ctx context.Context, lease time.Duration) error {
	return s.h.lock(ctx, lease)
}
func (s *rwSide) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	return s.h.tryLock(ctx, wait, lease)
}
func (s *rwSide) Unlock(ctx context.Context) error                  { return s.h.unlock(ctx) }
func (s *rwSide) ForceUnlock(ctx context.Context) (bool, error)     { return s.h.forceUnlockOp(ctx) }
func (s *rwSide) IsLocked(ctx context.Context) (bool, error)        { return s.h.isLockedOp(ctx) }
func (s *rwSide) IsHeldByCurrent(ctx context.Context) (bool, error) { return s.h.isHeldByCurrent(ctx) }
func (s *rwSide) HoldCount(ctx context.Context) (int, error)        { return s.h.holdCount(ctx, "holdcount") }
func (s *rwSide) RemainTTL(ctx context.Context) (time.Duration, error) {
	return s.h.remainTTL(ctx)
}
