package rlock

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// ReadWriteLock is Redisson's RReadWriteLock [getReadWriteLock]: many
// readers or one writer, both sides reentrant per owner. The write owner may
// also take the read lock (downgrade: after its last write unlock it keeps
// reading); a reader cannot upgrade (its write attempt waits like anyone
// else's). Each read hold has its own timeout key, so one stuck reader's
// lease expires on its own while others keep reading.
type ReadWriteLock struct {
	c    *Client
	name string
}

// NewReadWriteLock returns the read-write lock of the given name.
func (c *Client) NewReadWriteLock(name string) *ReadWriteLock {
	return &ReadWriteLock{c: c, name: name}
}

// Name returns the lock's name, which is also its Redis key.
func (rw *ReadWriteLock) Name() string {
	if rw == nil {
		return ""
	}
	return rw.name
}

// ReadLock returns the shared side.
func (rw *ReadWriteLock) ReadLock() Locker { return rw.side(false) }

// WriteLock returns the exclusive side.
func (rw *ReadWriteLock) WriteLock() Locker { return rw.side(true) }

func (rw *ReadWriteLock) side(write bool) *RWSide {
	if rw == nil {
		return &RWSide{write: write}
	}
	return &RWSide{base: &Lock{c: rw.c, name: rw.name}, write: write}
}

// RWSide is one side (read or write) of a ReadWriteLock.
type RWSide struct {
	*base
	write bool
}

var _ Locker = (*RWSide)(nil)

// suffix follows the owner's field on this side: the writer's field is
// "<client id>:<owner>:write", a reader's the plain one.
func (s *RWSide) suffix() string {
	if s.write {
		return ":write"
	}
	return ""
}

// field returns the hash field of ctx's owner on this side.
func (s *RWSide) field(ctx context.Context) string { return s.c.field(ctx) + s.suffix() }

// mode returns the value of the hash's mode field while this side is held,
// and the message its release publishes.
func (s *RWSide) mode() (mode, message string) {
	if s.write {
		return "write", UnlockMessage
	}
	return "read", ReadUnlockMessage
}

// spec returns the acquire script of this side for the owner whose field on
// this side is field. Everything the settle of an abandoned attempt needs is
// captured here: it runs on another goroutine, where a goroutine owner's
// field could not be derived again.
func (s *RWSide) spec(field string) acquireSpec {
	giveBack := func(ctx context.Context) error { return s.release(ctx, field) }
	if s.write {
		return acquireSpec{script: writeAcquireScript, renew: renewRLock, giveBack: giveBack}
	}
	return acquireSpec{
		script:    readAcquireScript,
		extraKeys: []string{readTimeoutPrefix(s.name, field)},
		extraArgs: []any{field + ":write"},
		renew:     renewRead,
		giveBack:  giveBack,
	}
}

// Lock waits until ctx's owner holds this side, with a watchdog lease.
func (s *RWSide) Lock(ctx context.Context) error { return s.LockLease(ctx, 0) }

// LockLease waits until ctx's owner holds this side (lease <= 0: watchdog).
func (s *RWSide) LockLease(ctx context.Context, lease time.Duration) error {
	_, err := s.TryLock(ctx, -1, lease)
	return err
}

// TryLock tries to take this side within wait (0: once; < 0: until held or
// ctx done).
func (s *RWSide) TryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	op := "readlock"
	if s.write {
		op = "writelock"
	}
	if err := s.checkAcquire(op, ctx, lease); err != nil {
		return false, err
	}
	field := s.field(ctx)
	spec := s.spec(field)
	try := func(ctx context.Context, field string, lease time.Duration) (bool, time.Duration, error) {
		held, ttl, _, err := s.runAttempt(ctx, field, lease, spec)
		return held, ttl, err
	}
	return s.c.lockAcquire(ctx, op, s.name, RWChannelName(s.name), field, wait, lease, try)
}

// Unlock releases one hold of ctx's owner on this side; ErrNotHeld if it
// holds none. A read unlock publishes the read-unlock message when the lock
// ends; a write unlock publishes the unlock message (or, on a downgrade, the
// read-unlock message that lets waiting readers in).
func (s *RWSide) Unlock(ctx context.Context) error {
	return s.unlockWith(ctx, s.suffix(), s.release)
}

// release drops one hold of field on this side.
func (s *RWSide) release(ctx context.Context, field string) error {
	c, name := s.c, s.name
	pub, latch := c.opts.publishCommand, c.opts.latchTTL.Milliseconds()
	if s.write {
		keys := []string{name, RWChannelName(name), c.latchKey(name)}
		args := []any{UnlockMessage, c.leaseFor(name, field).Milliseconds(), field, pub, latch, ReadUnlockMessage}
		return c.releaseHold(ctx, name, field, writeReleaseScript, keys, args)
	}
	keys := []string{name, RWChannelName(name), readTimeoutPrefix(name, field), c.latchKey(name)}
	args := []any{ReadUnlockMessage, field, pub, latch, suffixName(name, "")}
	return c.releaseHold(ctx, name, field, readReleaseScript, keys, args)
}

// ForceUnlock deletes the lock if it is held in this side's mode, whoever
// holds it, and wakes its waiters.
func (s *RWSide) ForceUnlock(ctx context.Context) (bool, error) {
	if err := s.check("forceunlock", ctx); err != nil {
		return false, err
	}
	mode, msg := s.mode()
	n, err := rwForceUnlockScript.Run(ctx, s.c.rdb, []string{s.name, RWChannelName(s.name)}, mode, msg, s.c.opts.publishCommand).Int()
	return n == 1, opErr("forceunlock", s.name, err)
}

// IsLocked reports whether the lock is held in this side's mode.
func (s *RWSide) IsLocked(ctx context.Context) (bool, error) {
	if err := s.check("islocked", ctx); err != nil {
		return false, err
	}
	mode, err := s.c.rdb.HGet(ctx, s.name, "mode").Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	want, _ := s.mode()
	return mode == want, opErr("islocked", s.name, err)
}

// IsHeldByCurrent reports whether ctx's owner holds this side.
func (s *RWSide) IsHeldByCurrent(ctx context.Context) (bool, error) {
	n, err := s.base.holdCount(ctx, "isheldbycurrent", s.suffix())
	return n > 0, err
}

// HoldCount returns how many times ctx's owner holds this side.
func (s *RWSide) HoldCount(ctx context.Context) (int, error) {
	return s.base.holdCount(ctx, "holdcount", s.suffix())
}

// Lost returns a channel closed when the watchdog finds the hold of ctx's
// owner on this side lost (see Lock.Lost).
func (s *RWSide) Lost(ctx context.Context) <-chan struct{} {
	ch, _ := s.base.watch(ctx, s.suffix())
	return ch
}

// LostContext returns a context derived from ctx that is cancelled, with
// cause ErrLockLost (or ErrClosed), when the hold of ctx's owner on this
// side is lost (see Lock.LostContext). Call stop when done.
func (s *RWSide) LostContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ch, errf := s.base.watch(ctx, s.suffix())
	return lostContext(ctx, s.Name(), ch, errf)
}
