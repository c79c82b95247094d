package rlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/watchdog"
)

// Locker is satisfied by every lock type of this package.
//
// Lease: lease <= 0 asks for a watchdog-managed lease (the key lives
// WatchdogTimeout and is renewed every third of it while held); lease > 0 is
// a fixed lease that is never renewed. Wait: 0 makes one attempt, > 0 waits
// up to wait, < 0 waits until held or ctx is done. A ctx deadline or
// cancellation always ends a wait with ctx's error and leaves nothing behind.
type Locker interface {
	// Name returns the lock's name.
	Name() string
	// Lock waits until the lock is held, with a watchdog lease [lock()].
	Lock(ctx context.Context) error
	// LockLease waits until the lock is held, with the given lease
	// [lock(leaseTime)].
	LockLease(ctx context.Context, lease time.Duration) error
	// TryLock tries to take the lock within wait; false when the wait ran
	// out [tryLock(wait, lease)].
	TryLock(ctx context.Context, wait, lease time.Duration) (bool, error)
	// Unlock releases one hold of ctx's owner; ErrNotHeld if it holds none
	// [unlock()].
	Unlock(ctx context.Context) error
	// ForceUnlock deletes the lock whoever holds it and wakes waiters;
	// it reports whether a lock existed [forceUnlock()].
	ForceUnlock(ctx context.Context) (bool, error)
	// IsLocked reports whether anyone holds the lock [isLocked()].
	IsLocked(ctx context.Context) (bool, error)
	// IsHeldByCurrent reports whether ctx's owner holds the lock
	// [isHeldByCurrentThread()].
	IsHeldByCurrent(ctx context.Context) (bool, error)
	// HoldCount returns how many times ctx's owner holds the lock
	// [getHoldCount()].
	HoldCount(ctx context.Context) (int, error)
	// RemainTTL returns the remaining lease, 0 when the lock is not held,
	// NoExpiry when its key has no expiry [remainTimeToLive()].
	RemainTTL(ctx context.Context) (time.Duration, error)
}

// NoExpiry is what RemainTTL returns for a lock key without expiry (never
// written so by goredisson or Redisson, but possible by hand).
const NoExpiry time.Duration = -1

// Lock is a reentrant lock stored as a Redis hash (Redisson's RLock). A Lock
// value is only a handle: many goroutines may share it, each acting for its
// own owner.
type Lock struct {
	c    *Client
	name string
}

var _ Locker = (*Lock)(nil)

// base is Lock under another name, embedded by the lock types that share
// its layout (SpinLock, FencedLock) so that its methods are promoted while
// they define their own Lock method.
type base = Lock

// NewLock returns the reentrant lock of the given name [getLock]. An empty
// name is reported by the lock's methods as ErrInvalidArgument.
func (c *Client) NewLock(name string) *Lock {
	return &Lock{c: c, name: name}
}

// Name returns the lock's name, which is also its Redis key.
func (l *Lock) Name() string {
	if l == nil {
		return ""
	}
	return l.name
}

// check validates the handle for an operation.
func (l *Lock) check(op string, ctx context.Context) error {
	switch {
	case l == nil || l.c == nil:
		return opErr(op, l.Name(), fmt.Errorf("%w: nil client", ErrInvalidArgument))
	case l.name == "":
		return opErr(op, "", fmt.Errorf("%w: empty lock name", ErrInvalidArgument))
	case ctx == nil:
		return opErr(op, l.name, fmt.Errorf("%w: nil context", ErrInvalidArgument))
	case l.c.cluster && !slotSafe(l.name):
		return opErr(op, l.name, fmt.Errorf("%w: on Redis Cluster a lock name with a stray '{' or '}' puts its auxiliary keys in other slots; use a hash tag such as {%s}", ErrInvalidArgument, "order:42"))
	case l.c.closed.Load():
		return opErr(op, l.name, ErrClosed)
	}
	return nil
}

// checkAcquire validates the handle and the arguments of an acquisition.
func (l *Lock) checkAcquire(op string, ctx context.Context, lease time.Duration) error {
	if err := l.check(op, ctx); err != nil {
		return err
	}
	return opErr(op, l.name, checkArgs(ctx, lease))
}

// Lock waits until ctx's owner holds the lock, with a watchdog lease.
func (l *Lock) Lock(ctx context.Context) error {
	return l.LockLease(ctx, 0)
}

// LockLease waits until ctx's owner holds the lock. lease <= 0 is a watchdog
// lease; lease > 0 a fixed one.
func (l *Lock) LockLease(ctx context.Context, lease time.Duration) error {
	_, err := l.tryLock("lock", ctx, -1, lease)
	return err
}

// TryLock tries to take the lock for ctx's owner within wait (0: once; < 0:
// until held or ctx done). It returns false with a nil error when the wait
// ran out.
func (l *Lock) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	return l.tryLock("trylock", ctx, wait, lease)
}

func (l *Lock) tryLock(op string, ctx context.Context, wait, lease time.Duration) (bool, error) {
	return l.tryWith(op, ctx, wait, lease, l.attempt, nil)
}

// tryWith validates a call and runs the acquisition with the attempt func,
// waiting on the unlock channel, or spinning with backoff when spin is set.
func (l *Lock) tryWith(op string, ctx context.Context, wait, lease time.Duration, try attemptFunc, spin *Backoff) (bool, error) {
	if err := l.checkAcquire(op, ctx, lease); err != nil {
		return false, err
	}
	c := l.c
	if spin != nil {
		held, err := c.spinAcquire(ctx, c.field(ctx), wait, lease, try, *spin)
		return held, opErr(op, l.name, err)
	}
	return c.lockAcquire(ctx, op, l.name, ChannelName(l.name), c.field(ctx), wait, lease, try)
}

// attempt runs acquire.lua once.
func (l *Lock) attempt(ctx context.Context, field string, lease time.Duration) (bool, time.Duration, error) {
	held, ttl, _, err := l.runAttempt(ctx, field, lease, acquireSpec{script: acquireScript})
	return held, ttl, err
}

// acquireSpec describes one kind of acquire script: acquire.lua or a
// variant taking the same first two keys (lock, cancel marker) and
// arguments (lease, field) followed by extra ones.
type acquireSpec struct {
	script    *redis.Script
	extraKeys []string
	extraArgs []any
	renew     renewKind
	// giveBack, when set, releases one hold of the field: the settle of an
	// abandoned attempt then marks it cancelled and gives back a hold it
	// took with giveBack instead of cancel.lua's plain RLock release.
	giveBack func(ctx context.Context) error
}

// runAttempt runs one acquire script and records a success. It returns the
// fencing token when the script hands one out. An attempt whose reply was
// lost is settled in the background.
func (l *Lock) runAttempt(ctx context.Context, field string, lease time.Duration, spec acquireSpec) (held bool, ttl time.Duration, token int64, err error) {
	c := l.c
	keep := lease
	if keep <= 0 {
		keep = c.opts.watchdogTimeout
	}
	k := holdKey{l.name, field}
	if err := c.awaitPending(ctx, k); err != nil {
		return false, 0, 0, err
	}
	if err := c.runUnsettled(ctx, k); err != nil {
		return false, 0, 0, err
	}
	before := c.known(l.name, field)
	marker := prefixName(cancelPrefix, l.name) + ":" + c.nextID()
	keys := append([]string{l.name, marker}, spec.extraKeys...)
	args := append([]any{keep.Milliseconds(), field}, spec.extraArgs...)
	r, err, _ := bounded(c, ctx, func() (acquireReply, error) {
		return c.runAcquire(ctx, spec.script, keys, args)
	})
	v := r.v
	if err != nil && !errors.Is(err, redis.Nil) {
		if !isServerReply(err) && !notSent(err) {
			settle := func(sctx context.Context) error {
				if spec.giveBack != nil {
					return c.settleWith(sctx, l.name, field, marker, before, spec.giveBack)
				}
				return c.settle(sctx, l.name, field, marker, before)
			}
			c.background(ctx, k, func(sctx context.Context) {
				if err := settle(sctx); err != nil {
					c.logger().Warn("goredisson: could not settle an acquire attempt of unknown outcome yet; will settle it before the owner's next call on the lock",
						"lock", l.name, "field", field, "err", err)
					c.addUnsettled(k, settle)
				}
			})
		}
		return false, 0, 0, err
	}
	held, n, err := parseAcquireReply(v, err)
	if err != nil {
		return false, 0, 0, err
	}
	if held {
		c.acquired(l.name, field, lease, spec.renew)
		if r.unsynced {
			giveBack := spec.giveBack
			if giveBack == nil {
				giveBack = func(ctx context.Context) error { return l.release(ctx, field) }
			}
			if rerr := giveBack(ctx); rerr != nil {
				return false, 0, 0, fmt.Errorf("%w (and giving it back failed: %w)", ErrReplicaSync, rerr)
			}
			return false, 0, 0, ErrReplicaSync
		}
		return true, 0, n, nil
	}
	if n == -2 || n == -3 {
		n = 0 // expired between the checks, or a stale attempt: try again at once
	}
	return false, time.Duration(n) * time.Millisecond, 0, nil
}

// acquireReply is an acquire script's reply; unsynced reports that the
// script took a hold that too few replicas confirmed (WithReplicaSync).
type acquireReply struct {
	v        any
	unsynced bool
}

// runAcquire runs an acquire script; with WithReplicaSync, WAIT follows it
// in the same pipeline, on the same connection.
func (c *Client) runAcquire(ctx context.Context, script *redis.Script, keys []string, args []any) (acquireReply, error) {
	if c.opts.syncReplicas == 0 {
		v, err := script.Run(ctx, c.rdb, keys, args...).Result()
		return acquireReply{v: v}, err
	}
	for attempt := 0; ; attempt++ {
		pipe := c.rdb.Pipeline()
		ev := script.EvalSha(ctx, pipe, keys, args...)
		wait := pipe.Do(ctx, "wait", c.opts.syncReplicas, c.opts.syncTimeout.Milliseconds())
		_, _ = pipe.Exec(ctx)
		v, err := ev.Result()
		if isNoScript(err) && attempt == 0 {
			if err := script.Load(ctx, c.rdb).Err(); err != nil {
				return acquireReply{}, err
			}
			continue
		}
		if held, _, perr := parseAcquireReply(v, err); perr != nil || !held {
			return acquireReply{v: v}, err // not held (or failed): nothing to confirm
		}
		n, werr := wait.Int64()
		if werr != nil {
			return acquireReply{v: v, unsynced: true}, err
		}
		return acquireReply{v: v, unsynced: n < int64(c.opts.syncReplicas)}, err
	}
}

// parseAcquireReply reads an acquire script's reply: nil (held) or a PTTL
// from acquire.lua; {1, token} or {0, pttl} from fenced_acquire.lua.
func parseAcquireReply(v any, err error) (held bool, n int64, _ error) {
	if errors.Is(err, redis.Nil) {
		return true, 0, nil
	}
	switch r := v.(type) {
	case int64:
		return false, r, nil
	case []any:
		if len(r) == 2 {
			flag, ok1 := r[0].(int64)
			num, ok2 := r[1].(int64)
			if ok1 && ok2 {
				return flag == 1, num, nil
			}
		}
	}
	return false, 0, fmt.Errorf("unexpected acquire script reply %v", v)
}

// settle resolves an acquire attempt whose reply was lost: the attempt is
// marked cancelled (so that it does nothing if it still arrives) and the
// hold it took, if its marker shows one, is given back. It runs in the
// background, so the caller returns by its deadline; the owner's next call
// on the lock waits for it. If Redis cannot be reached either, the settle
// is kept and run again before the owner's next acquire or unlock of the
// lock, so that a hold taken by the attempt is never counted twice.
func (c *Client) settle(ctx context.Context, name, field, marker string, before int) error {
	keys := []string{name, ChannelName(name), marker}
	n, err := cancelScript.Run(ctx, c.rdb, keys, field, UnlockMessage, c.opts.publishCommand,
		cancelMarkerTTL.Milliseconds(), before).Int()
	if err != nil {
		return err
	}
	if n == 1 {
		c.logger().Debug("goredisson: gave back a hold taken by an abandoned acquire attempt", "lock", name, "field", field)
	}
	return nil
}

// settleWith is settle for lock types whose release is not RLock's: it
// marks the attempt cancelled (SET ... GET, so that it can no longer take a
// hold) and gives back the hold it took, if its marker shows one (or, the
// marker gone, if the field holds more than the before holds known).
func (c *Client) settleWith(ctx context.Context, name, field, marker string, before int, giveBack func(context.Context) error) error {
	old, err := c.rdb.SetArgs(ctx, marker, "c", redis.SetArgs{TTL: cancelMarkerTTL, Get: true}).Result()
	switch {
	case errors.Is(err, redis.Nil):
		n, herr := c.rdb.HGet(ctx, name, field).Int()
		if errors.Is(herr, redis.Nil) {
			return nil
		}
		if herr != nil {
			return herr
		}
		if n > before {
			return giveBack(ctx)
		}
		return nil
	case err != nil:
		return err
	case strings.HasPrefix(old, "h"):
		return giveBack(ctx)
	}
	return nil
}

// cancelMarkerTTL outlives any delayed delivery or client retry of an
// abandoned attempt.
const cancelMarkerTTL = time.Minute

// Unlock releases one hold of ctx's owner. The last one deletes the lock,
// publishes the unlock message and stops the watchdog for it. ErrNotHeld
// when the owner holds none; nothing changes then.
//
// A release whose reply was lost (a broken connection, or ctx ending while
// it was in flight) is retried once; each request carries its own unlock
// latch, so a retry is answered as the first try was and never releases a
// second hold. When ctx has ended, the retry runs in the background (for a
// few seconds at most) and Unlock returns ctx's error at once; the owner's
// next call on this lock waits for the retry to finish.
func (l *Lock) Unlock(ctx context.Context) error {
	return l.unlockWith(ctx, "", l.release)
}

// release drops one hold of field with release.lua.
func (l *Lock) release(ctx context.Context, field string) error {
	c := l.c
	keys := []string{l.name, ChannelName(l.name), c.latchKey(l.name)}
	args := []any{UnlockMessage, c.leaseFor(l.name, field).Milliseconds(), field, c.opts.publishCommand, c.opts.latchTTL.Milliseconds()}
	return c.releaseHold(ctx, l.name, field, releaseScript, keys, args)
}

// unlockWith is Unlock for every lock type: it validates the call, waits
// for a clean-up of the owner's interrupted call on this lock, then drops
// one hold of the owner's field plus suffix with release.
func (l *Lock) unlockWith(ctx context.Context, suffix string, release func(ctx context.Context, field string) error) error {
	if err := l.check("unlock", ctx); err != nil {
		return err
	}
	field := l.c.field(ctx) + suffix
	k := holdKey{l.name, field}
	if err := l.c.awaitPending(ctx, k); err != nil {
		return opErr("unlock", l.name, err)
	}
	if err := l.c.runUnsettled(ctx, k); err != nil {
		return opErr("unlock", l.name, err)
	}
	return opErr("unlock", l.name, release(ctx, field))
}

// latchKey returns a fresh unlock latch key for the lock.
func (c *Client) latchKey(name string) string {
	return prefixName(latchPrefix, name) + ":" + c.nextID()
}

// releaseHold runs a release script (reply: 0 holds remain, 1 released, nil
// not held) for one hold of field and records the outcome. A reply lost to
// a broken connection is retried once with the same latch; when ctx has
// ended, the retry runs in the background and ctx's error is returned.
func (c *Client) releaseHold(ctx context.Context, name, field string, script *redis.Script, keys []string, args []any) error {
	release := func(ctx context.Context) error {
		v, err, _ := bounded(c, ctx, func() (any, error) { return script.Run(ctx, c.rdb, keys, args...).Result() })
		switch {
		case errors.Is(err, redis.Nil):
			c.released(name, field, true)
			return ErrNotHeld
		case err != nil:
			return err
		}
		n, _ := v.(int64)
		c.released(name, field, n == 1)
		return nil
	}
	err := release(ctx)
	if err == nil || errors.Is(err, ErrNotHeld) || isServerReply(err) || notSent(err) {
		return err
	}
	if ctx.Err() != nil {
		c.background(ctx, holdKey{name, field}, func(sctx context.Context) {
			if err := release(sctx); err != nil && !errors.Is(err, ErrNotHeld) {
				c.logger().Warn("goredisson: could not finish an interrupted unlock; the hold expires with its lease",
					"lock", name, "field", field, "err", err)
			}
		})
		return c.ctxOr(ctx, err)
	}
	return release(ctx)
}

// ForceUnlock deletes the lock whoever holds it and wakes its waiters. It
// reports whether there was a lock. Holders' watchdogs notice the loss at
// their next renewal.
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) {
	if err := l.check("forceunlock", ctx); err != nil {
		return false, err
	}
	c := l.c
	n, err := forceUnlockScript.Run(ctx, c.rdb, []string{l.name, ChannelName(l.name)}, UnlockMessage, c.opts.publishCommand).Int()
	if err != nil {
		return false, opErr("forceunlock", l.name, err)
	}
	return n == 1, nil
}

// IsLocked reports whether anyone holds the lock.
func (l *Lock) IsLocked(ctx context.Context) (bool, error) {
	if err := l.check("islocked", ctx); err != nil {
		return false, err
	}
	n, err := l.c.rdb.Exists(ctx, l.name).Result()
	return n == 1, opErr("islocked", l.name, err)
}

// IsHeldByCurrent reports whether ctx's owner holds the lock. Like
// HoldCount, it first waits for a clean-up of the owner's interrupted call
// on this lock, if one is in flight.
func (l *Lock) IsHeldByCurrent(ctx context.Context) (bool, error) {
	n, err := l.holdCount(ctx, "isheldbycurrent", "")
	return n > 0, err
}

// HoldCount returns how many times ctx's owner holds the lock (0: not held).
func (l *Lock) HoldCount(ctx context.Context) (int, error) {
	return l.holdCount(ctx, "holdcount", "")
}

// holdCount returns the hold count of ctx's owner under its field plus
// suffix ("" for the lock's own field, ":write" for a read-write lock's
// writer), after any clean-up of that owner's interrupted call.
func (l *Lock) holdCount(ctx context.Context, op, suffix string) (int, error) {
	if err := l.check(op, ctx); err != nil {
		return 0, err
	}
	field := l.c.field(ctx) + suffix
	if err := l.c.awaitPending(ctx, holdKey{l.name, field}); err != nil {
		return 0, opErr(op, l.name, err)
	}
	n, err := l.c.rdb.HGet(ctx, l.name, field).Int()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return n, opErr(op, l.name, err)
}

// RemainTTL returns the remaining lease of the lock: 0 when it is not held,
// NoExpiry when its key has no expiry.
func (l *Lock) RemainTTL(ctx context.Context) (time.Duration, error) {
	if err := l.check("remainttl", ctx); err != nil {
		return 0, err
	}
	return remainTTL(ctx, l.c.rdb, l.name)
}

func remainTTL(ctx context.Context, rdb redis.UniversalClient, key string) (time.Duration, error) {
	d, err := rdb.PTTL(ctx, key).Result()
	switch {
	case err != nil:
		return 0, opErr("remainttl", key, err)
	case d == -2 || d == -2*time.Millisecond:
		return 0, nil
	case d == -1 || d == -1*time.Millisecond:
		return NoExpiry, nil
	}
	return d, nil
}

// Lost returns a channel that is closed when this client's watchdog finds
// that the hold of ctx's owner is lost: the lease expired (for instance
// because Redis was unreachable for a whole lease), the lock was
// force-unlocked, or another owner holds it. It is also closed when the
// Client is closed while the hold is kept (LostContext then reports
// ErrClosed as the cause). It is nil (blocks forever) when the owner holds
// no watchdog lease through this client: fixed leases are not watched.
func (l *Lock) Lost(ctx context.Context) <-chan struct{} {
	ch, _ := l.watch(ctx, "")
	return ch
}

// LostContext returns a context derived from ctx that is cancelled, with
// cause ErrLockLost (or ErrClosed), when the hold of ctx's owner is lost as
// Lost describes. Call stop when the critical section ends. Without a
// watchdog hold the returned context only ends with ctx.
func (l *Lock) LostContext(ctx context.Context) (lctx context.Context, stop context.CancelFunc) {
	ch, errf := l.watch(ctx, "")
	return lostContext(ctx, l.Name(), ch, errf)
}

// watch returns the watchdog's loss channel and reason of the hold of ctx's
// owner under its field plus suffix, or nil when there is none.
func (l *Lock) watch(ctx context.Context, suffix string) (<-chan struct{}, func() error) {
	if l.check("lost", ctx) != nil {
		return nil, nil
	}
	return l.c.lostChan(l.name, l.c.field(ctx)+suffix)
}

// lostContext derives from ctx a context cancelled, with cause ErrLockLost
// or ErrClosed, when ch (a watchdog entry's Lost channel) closes.
func lostContext(ctx context.Context, name string, ch <-chan struct{}, errf func() error) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	lctx, cancel := context.WithCancelCause(ctx)
	if ch == nil {
		return lctx, func() { cancel(context.Canceled) }
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
			cause := ErrLockLost
			if errors.Is(errf(), watchdog.ErrClosed) {
				cause = ErrClosed
			}
			cancel(opErr("lost", name, cause))
		case <-done:
		case <-lctx.Done():
		}
	}()
	var once sync.Once
	return lctx, func() {
		once.Do(func() { close(done) })
		cancel(context.Canceled)
	}
}
