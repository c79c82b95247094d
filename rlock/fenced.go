package rlock

import (
	"context"
	"time"

	"github.com/goredisson/goredisson/internal/engine"
)

// FencedLock is a lock whose acquisitions return fencing tokens.
type FencedLock struct{ h handle }

var _ Locker = (*FencedLock)(nil)

// NewFencedLock returns the fenced lock of the given name [getFencedLock].
func (c *Client) NewFencedLock(name string) *FencedLock {
	return &FencedLock{h: newHandle(c, name, engine.KindFenced)}
}

func (f *FencedLock) handle() *handle {
	if f == nil {
		return nil
	}
	return &f.h
}

// Name returns the lock's name: its Redis key unless WithNameMapper maps it.
func (f *FencedLock) Name() string { return f.handle().lockName() }

// Lock is Lock.Lock; LockToken also returns the token.
func (f *FencedLock) Lock(ctx context.Context) error { return f.handle().lock(ctx, 0) }

// LockLease is Lock.LockLease.
func (f *FencedLock) LockLease(ctx context.Context, lease time.Duration) error {
	return f.handle().lock(ctx, lease)
}

// TryLock is Lock.TryLock; TryLockToken also returns the token.
func (f *FencedLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	return f.handle().tryLock(ctx, wait, lease)
}

// LockToken is Lock, returning the fencing token [lockAndGetToken].
func (f *FencedLock) LockToken(ctx context.Context) (int64, error) {
	t, _, err := f.handle().acquire(ctx, "locktoken", forever, 0)
	return t, err
}

// TryLockToken is TryLock, returning the fencing token [tryLockAndGetToken].
func (f *FencedLock) TryLockToken(ctx context.Context, wait, lease time.Duration) (token int64, ok bool, err error) {
	return f.handle().acquire(ctx, "trylocktoken", max(wait, 0), lease)
}

// Token returns the newest token issued by any client, 0 if none [getToken].
func (f *FencedLock) Token(ctx context.Context) (int64, error) {
	h := f.handle()
	if err := h.check(ctx, "token"); err != nil {
		return 0, err
	}
	n, err := h.FencedToken(ctx)
	return n, opErr("token", h.Key(), err)
}

// Unlock is Lock.Unlock.
func (f *FencedLock) Unlock(ctx context.Context) error { return f.handle().unlock(ctx) }

// ForceUnlock is Lock.ForceUnlock; the token counter is kept.
func (f *FencedLock) ForceUnlock(ctx context.Context) (bool, error) {
	return f.handle().forceUnlockOp(ctx)
}

// IsLocked is Lock.IsLocked.
func (f *FencedLock) IsLocked(ctx context.Context) (bool, error) { return f.handle().isLockedOp(ctx) }

// IsHeldByCurrent is Lock.IsHeldByCurrent.
func (f *FencedLock) IsHeldByCurrent(ctx context.Context) (bool, error) {
	return f.handle().isHeldByCurrent(ctx)
}

// HoldCount is Lock.HoldCount.
func (f *FencedLock) HoldCount(ctx context.Context) (int, error) {
	return f.handle().holdCount(ctx, "holdcount")
}

// RemainTTL is Lock.RemainTTL.
func (f *FencedLock) RemainTTL(ctx context.Context) (time.Duration, error) {
	return f.handle().remainTTL(ctx)
}
