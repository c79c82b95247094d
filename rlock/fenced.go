package rlock

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// FencedLock is a reentrant lock with the RLock layout that hands out a
// fencing token with every successful acquisition, re-entries included, as
// Redisson's FencedLock does [getFencedLock]. Tokens strictly increase per
// lock name across all clients; pass the token along with every write the
// lock guards and have the storage reject a token older than one it has
// seen. That closes the gap a lease cannot: a holder paused past its lease
// (GC, a stopped VM) whose lock was taken meanwhile is refused by the
// storage. Every Locker method not redefined here is Lock's.
type FencedLock struct {
	*base
}

var _ Locker = (*FencedLock)(nil)

// NewFencedLock returns the fenced lock of the given name [getFencedLock].
func (c *Client) NewFencedLock(name string) *FencedLock {
	return &FencedLock{base: c.NewLock(name)}
}

// TokenKey returns the key of the lock's token counter
// (redisson_lock_token:{name}).
func TokenKey(name string) string { return prefixName(tokenPrefix, name) }

// Lock waits until ctx's owner holds the lock, with a watchdog lease.
func (f *FencedLock) Lock(ctx context.Context) error {
	_, err := f.LockToken(ctx)
	return err
}

// LockLease waits until ctx's owner holds the lock (lease <= 0: watchdog).
func (f *FencedLock) LockLease(ctx context.Context, lease time.Duration) error {
	_, _, err := f.tryToken("lock", ctx, -1, lease)
	return err
}

// TryLock tries to take the lock within wait; use TryLockToken for the token.
func (f *FencedLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	_, ok, err := f.tryToken("trylock", ctx, wait, lease)
	return ok, err
}

// LockToken waits until ctx's owner holds the lock, with a watchdog lease,
// and returns the fencing token of this acquisition.
func (f *FencedLock) LockToken(ctx context.Context) (int64, error) {
	t, _, err := f.tryToken("locktoken", ctx, -1, 0)
	return t, err
}

// TryLockToken tries to take the lock within wait and returns the fencing
// token of this acquisition; ok is false (token 0) when the wait ran out.
func (f *FencedLock) TryLockToken(ctx context.Context, wait, lease time.Duration) (token int64, ok bool, err error) {
	return f.tryToken("trylocktoken", ctx, wait, lease)
}

func (f *FencedLock) tryToken(op string, ctx context.Context, wait, lease time.Duration) (int64, bool, error) {
	if f == nil {
		_, err := (*Lock)(nil).tryLock(op, ctx, wait, lease)
		return 0, false, err
	}
	var token int64
	spec := acquireSpec{script: fencedScript, extraKeys: []string{TokenKey(f.name)}}
	try := func(ctx context.Context, field string, lease time.Duration) (bool, time.Duration, error) {
		held, ttl, t, err := f.runAttempt(ctx, field, lease, spec)
		if held {
			token = t
		}
		return held, ttl, err
	}
	ok, err := f.tryWith(op, ctx, wait, lease, try, nil)
	if !ok {
		token = 0
	}
	return token, ok, err
}

// Token returns the newest token issued for this lock by any client, 0 when
// none was ever issued.
func (f *FencedLock) Token(ctx context.Context) (int64, error) {
	if f == nil {
		return 0, (*Lock)(nil).check("token", ctx)
	}
	if err := f.check("token", ctx); err != nil {
		return 0, err
	}
	n, err := f.c.rdb.Get(ctx, TokenKey(f.name)).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return n, opErr("token", f.name, err)
}
