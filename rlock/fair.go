package rlock

import (
	"context"
	"time"
)

// FairLock is a reentrant lock that waiters acquire in the order they asked
// for it (Redisson's RFairLock [getFairLock]). It has the RLock hash plus a
// waiter queue (QueueKey) and a sorted set of waiter timeouts (TimeoutKey);
// an unlock wakes only the waiter at the head of the queue, on its own
// channel (FairChannelName).
//
// A waiter stays in the queue while it shows signs of life: each of its
// attempts, made at least every third of the Client's fair waiter timeout
// (WithFairWaiterTimeout, default 5 s), pushes its timeout forward. A waiter
// that gives up (its wait ran out, its ctx ended) leaves the queue at once;
// one that vanished (its process died) is purged once it reaches the head
// and its timeout has passed, so it never holds the queue up for longer.
// A single attempt (TryLock with wait 0) never joins the queue: it takes the
// lock only when nobody is queued.
//
// Every Locker method not redefined here is Lock's.
type FairLock struct {
	*base
	waiterTimeout time.Duration
}

var _ Locker = (*FairLock)(nil)

// NewFairLock returns the fair lock of the given name [getFairLock].
func (c *Client) NewFairLock(name string) *FairLock {
	return &FairLock{base: c.NewLock(name), waiterTimeout: c.opts.waiterTimeout}
}

// Lock waits in the queue until ctx's owner holds the lock, with a watchdog
// lease.
func (f *FairLock) Lock(ctx context.Context) error { return f.LockLease(ctx, 0) }

// LockLease waits in the queue until ctx's owner holds the lock (lease <= 0:
// watchdog).
func (f *FairLock) LockLease(ctx context.Context, lease time.Duration) error {
	_, err := f.tryLock("lock", ctx, -1, lease)
	return err
}

// TryLock waits in the queue up to wait (< 0: until held or ctx done) and
// leaves it when the wait runs out; wait 0 makes one attempt without
// queueing.
func (f *FairLock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	return f.tryLock("trylock", ctx, wait, lease)
}

func (f *FairLock) tryLock(op string, ctx context.Context, wait, lease time.Duration) (bool, error) {
	if f == nil {
		return (*Lock)(nil).tryLock(op, ctx, wait, lease)
	}
	if err := f.checkAcquire(op, ctx, lease); err != nil {
		return false, err
	}
	c, field := f.c, f.c.field(ctx)
	queue := "0"
	if wait != 0 {
		queue = "1"
	}
	spec := acquireSpec{
		script:    fairAcquireScript,
		extraKeys: []string{QueueKey(f.name), TimeoutKey(f.name)},
		extraArgs: []any{f.waiterTimeout.Milliseconds(), queue},
		renew:     renewRLock,
		giveBack:  func(ctx context.Context) error { return f.release(ctx, field) },
	}
	// Attempts double as the waiter's heartbeat: never sleep longer than a
	// third of the waiter timeout between two.
	beat := f.waiterTimeout / 3
	try := func(ctx context.Context, field string, lease time.Duration) (bool, time.Duration, error) {
		held, ttl, _, err := f.runAttempt(ctx, field, lease, spec)
		if !held && (ttl < 0 || ttl > beat) {
			ttl = beat
		}
		return held, ttl, err
	}
	held, err := c.acquire(ctx, f.name, FairChannelName(f.name, field), field, wait, lease, try)
	if !held && wait != 0 {
		f.leaveQueue(ctx, field, err != nil)
	}
	return held, opErr(op, f.name, err)
}

// leaveQueue removes the waiter entry of field after a wait that did not end
// with the lock. It runs on the caller's goroutine when the wait simply ran
// out; after an error or with ctx ended it runs in the background, like
// other clean-ups (the owner's next call on the lock waits for it). If Redis
// cannot be reached, the entry is purged after the waiter timeout.
func (f *FairLock) leaveQueue(ctx context.Context, field string, failed bool) {
	c := f.c
	keys := []string{f.name, QueueKey(f.name), TimeoutKey(f.name), ChannelName(f.name)}
	dequeue := func(ctx context.Context) error {
		_, err, _ := bounded(c, ctx, func() (any, error) {
			return fairDequeueScript.Run(ctx, c.rdb, keys, field, UnlockMessage, c.opts.publishCommand).Result()
		})
		return err
	}
	if !failed && ctx.Err() == nil && !c.closed.Load() && dequeue(ctx) == nil {
		return
	}
	c.background(ctx, holdKey{f.name, field}, func(sctx context.Context) {
		if err := dequeue(sctx); err != nil {
			c.logger().Warn("goredisson: could not leave a fair lock's queue; the entry is purged after the waiter timeout",
				"lock", f.name, "field", field, "err", err)
		}
	})
}

// Unlock releases one hold of ctx's owner; the last one deletes the lock and
// wakes the waiter at the head of the queue. ErrNotHeld when the owner holds
// none.
func (f *FairLock) Unlock(ctx context.Context) error {
	if f == nil {
		return (*Lock)(nil).Unlock(ctx)
	}
	return f.unlockWith(ctx, "", f.release)
}

// release drops one hold of field with fair_release.lua.
func (f *FairLock) release(ctx context.Context, field string) error {
	c, name := f.c, f.name
	keys := []string{name, QueueKey(name), TimeoutKey(name), ChannelName(name), c.latchKey(name)}
	args := []any{UnlockMessage, c.leaseFor(name, field).Milliseconds(), field, c.opts.publishCommand, c.opts.latchTTL.Milliseconds()}
	return c.releaseHold(ctx, name, field, fairReleaseScript, keys, args)
}

// ForceUnlock deletes the lock whoever holds it and wakes the waiter at the
// head of the queue; the queue itself is kept.
func (f *FairLock) ForceUnlock(ctx context.Context) (bool, error) {
	if f == nil {
		return (*Lock)(nil).ForceUnlock(ctx)
	}
	if err := f.check("forceunlock", ctx); err != nil {
		return false, err
	}
	keys := []string{f.name, QueueKey(f.name), TimeoutKey(f.name), ChannelName(f.name)}
	n, err := fairForceScript.Run(ctx, f.c.rdb, keys, UnlockMessage, f.c.opts.publishCommand).Int()
	return n == 1, opErr("forceunlock", f.name, err)
}
