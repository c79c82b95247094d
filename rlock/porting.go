package rlock

import (
	"context"
	"fmt"
	"time"
)

// Redisson calls a port needs that take an owner or a lease explicitly:
// isHeldByThread(threadId) and the fenced lock's lockAndGetToken(leaseTime).

// IsHeldByOwner reports whether owner holds the lock [isHeldByThread].
func (l *Lock) IsHeldByOwner(ctx context.Context, owner string) (bool, error) {
	return l.handle().isHeldByOwner(ctx, owner)
}

// IsHeldByOwner is Lock.IsHeldByOwner.
func (f *FencedLock) IsHeldByOwner(ctx context.Context, owner string) (bool, error) {
	return f.handle().isHeldByOwner(ctx, owner)
}

// IsHeldByOwner reports whether the owner holds every lock [isHeldByThread].
func (m *MultiLock) IsHeldByOwner(ctx context.Context, owner string) (bool, error) {
	return m.group().count(ctx, "isheldbyowner", func(l Locker, ctx context.Context) (bool, error) {
		o, ok := l.(interface {
			IsHeldByOwner(context.Context, string) (bool, error)
		})
		if !ok {
			return false, fmt.Errorf("%w: %T has no IsHeldByOwner", ErrInvalidArgument, l)
		}
		return o.IsHeldByOwner(ctx, owner)
	})
}

// isHeldByOwner reads whether the hash field "<client id>:<owner>" (with a
// write lock's ":write") holds the lock, as Redisson's HEXISTS of
// getLockName(threadId) does, once no call of that owner on the lock is in
// flight (or being settled) and its kept settles ran (see engine.Handle.IsHeldByOwner).
func (h *handle) isHeldByOwner(ctx context.Context, owner string) (bool, error) {
	if err := h.check(ctx, "isheldbyowner"); err != nil {
		return false, err
	}
	if owner == "" {
		return false, opErr(h.OpName("isheldbyowner"), h.Key(), fmt.Errorf("%w: empty owner id", ErrInvalidArgument))
	}
	ok, err := h.IsHeldByOwner(ctx, owner)
	return ok, opErr(h.OpName("isheldbyowner"), h.Key(), err)
}

// LockTokenLease is LockToken with a lease [lockAndGetToken(leaseTime)].
func (f *FencedLock) LockTokenLease(ctx context.Context, lease time.Duration) (int64, error) {
	t, _, err := f.handle().acquire(ctx, "locktoken", forever, lease)
	return t, err
}
