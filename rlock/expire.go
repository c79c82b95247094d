package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/goredisson/goredisson/internal/engine"
)

// Redisson's RExpirable on the locks (every RLock is a RedissonExpirable)
// and the semaphores: the time to live of all of an object's keys at once.
// Details and the keys of each kind: docs/api.md.

// ExpireCond is the condition of ExpireIf (Redis 7.0+).
type ExpireCond string

// The conditions of ExpireIf, as PEXPIREAT's NX, XX, GT and LT.
const (
	IfNotSet  ExpireCond = "NX" // only a key without expiry [expireIfNotSet]
	IfSet     ExpireCond = "XX" // only a key with an expiry [expireIfSet]
	IfGreater ExpireCond = "GT" // only later than the key's expiry [expireIfGreater]
	IfLess    ExpireCond = "LT" // only earlier than the key's expiry [expireIfLess]
)

// expire is Expire, ExpireAt and ExpireIf of every lock and synchronizer:
// cmd "pexpire" (ms: time to live) or "pexpireat" (ms: Unix time).
func expire(ctx context.Context, e *engine.Core, op, name string, keys []string, cmd string, ms int64, cond ExpireCond) (bool, error) {
	switch cond {
	case "", IfNotSet, IfSet, IfGreater, IfLess:
	default:
		return false, opErr(op, name, fmt.Errorf("%w: expire condition %q", ErrInvalidArgument, string(cond)))
	}
	if cmd == "pexpire" && ms < 1 {
		return false, opErr(op, name, fmt.Errorf("%w: time to live below 1ms", ErrInvalidArgument))
	}
	ok, err := e.Expire(ctx, keys, cmd, ms, string(cond))
	return ok, opErr(op, name, err)
}

// expireAt is ExpireAt and ExpireIf: the zero time is ErrInvalidArgument.
func expireAt(ctx context.Context, e *engine.Core, op, name string, keys []string, t time.Time, cond ExpireCond) (bool, error) {
	if t.IsZero() {
		return false, opErr(op, name, fmt.Errorf("%w: zero expiry time", ErrInvalidArgument))
	}
	return expire(ctx, e, op, name, keys, "pexpireat", t.UnixMilli(), cond)
}

// expireTime is ExpireTime: PEXPIRETIME of name.
func expireTime(ctx context.Context, e *engine.Core, op, name string) (time.Time, error) {
	t, err := e.ExpireTime(ctx, name)
	return t, opErr(op, name, err)
}

// clearExpire is ClearExpire: PERSIST every key.
func clearExpire(ctx context.Context, e *engine.Core, op, name string, keys []string) (bool, error) {
	ok, err := e.ClearExpire(ctx, keys)
	return ok, opErr(op, name, err)
}

// Expire sets the lock's keys' time to live, whoever holds it [expire].
func (l *Lock) Expire(ctx context.Context, ttl time.Duration) (bool, error) {
	return l.handle().expireOp(ctx, "pexpire", ttl.Milliseconds(), "")
}

// ExpireAt makes the lock's keys expire at t [expireAt].
func (l *Lock) ExpireAt(ctx context.Context, t time.Time) (bool, error) {
	return l.handle().expireAtOp(ctx, t, "")
}

// ExpireIf is ExpireAt if cond holds [expireIfSet, expireIfLess, ...].
func (l *Lock) ExpireIf(ctx context.Context, cond ExpireCond, t time.Time) (bool, error) {
	return l.handle().expireAtOp(ctx, t, cond)
}

// ExpireTime returns the key's expiry, zero if none [getExpireTime].
func (l *Lock) ExpireTime(ctx context.Context) (time.Time, error) {
	return l.handle().expireTimeOp(ctx)
}

// ClearExpire removes the expiry of the lock's keys [clearExpire].
func (l *Lock) ClearExpire(ctx context.Context) (bool, error) {
	return l.handle().clearExpireOp(ctx)
}

// Expire is Lock.Expire; it also sets the token counter's.
func (f *FencedLock) Expire(ctx context.Context, ttl time.Duration) (bool, error) {
	return f.handle().expireOp(ctx, "pexpire", ttl.Milliseconds(), "")
}

// ExpireAt is Lock.ExpireAt.
func (f *FencedLock) ExpireAt(ctx context.Context, t time.Time) (bool, error) {
	return f.handle().expireAtOp(ctx, t, "")
}

// ExpireIf is Lock.ExpireIf.
func (f *FencedLock) ExpireIf(ctx context.Context, cond ExpireCond, t time.Time) (bool, error) {
	return f.handle().expireAtOp(ctx, t, cond)
}

// ExpireTime is Lock.ExpireTime.
func (f *FencedLock) ExpireTime(ctx context.Context) (time.Time, error) {
	return f.handle().expireTimeOp(ctx)
}

// ClearExpire is Lock.ClearExpire.
func (f *FencedLock) ClearExpire(ctx context.Context) (bool, error) {
	return f.handle().clearExpireOp(ctx)
}

func (h *handle) expireOp(ctx context.Context, cmd string, ms int64, cond ExpireCond) (bool, error) {
	op := h.OpName("expire")
	if err := h.check(ctx, "expire"); err != nil {
		return false, err
	}
	return expire(ctx, h.Core(), op, h.Key(), h.ExpiryKeys(), cmd, ms, cond)
}

func (h *handle) expireAtOp(ctx context.Context, t time.Time, cond ExpireCond) (bool, error) {
	op := "expireat"
	if cond != "" {
		op = "expireif"
	}
	if err := h.check(ctx, op); err != nil {
		return false, err
	}
	return expireAt(ctx, h.Core(), h.OpName(op), h.Key(), h.ExpiryKeys(), t, cond)
}

func (h *handle) expireTimeOp(ctx context.Context) (time.Time, error) {
	if err := h.check(ctx, "expiretime"); err != nil {
		return time.Time{}, err
	}
	return expireTime(ctx, h.Core(), h.OpName("expiretime"), h.Key())
}

func (h *handle) clearExpireOp(ctx context.Context) (bool, error) {
	if err := h.check(ctx, "clearexpire"); err != nil {
		return false, err
	}
	return clearExpire(ctx, h.Core(), h.OpName("clearexpire"), h.Key(), h.ExpiryKeys())
}

// Expire makes the keys expire ttl from now [expire(Duration)].
func (o *Object) Expire(ctx context.Context, ttl time.Duration) (bool, error) {
	if err := o.s.check(ctx, "expire"); err != nil {
		return false, err
	}
	if ttl < time.Millisecond {
		return false, opErr("expire", o.s.Key(), fmt.Errorf("%w: time to live %v is below 1ms", ErrInvalidArgument, ttl))
	}
	ok, err := o.s.Expire(ctx, o.keys, ttl)
	return ok, opErr("expire", o.s.Key(), err)
}

// ClearExpire removes the keys' time to live [clearExpire()].
func (o *Object) ClearExpire(ctx context.Context) (bool, error) {
	if err := o.s.check(ctx, "clearexpire"); err != nil {
		return false, err
	}
	return clearExpire(ctx, o.s.Core(), "clearexpire", o.s.Key(), o.keys)
}

// ExpireAt is Lock.ExpireAt for the synchronizer's keys.
func (o *Object) ExpireAt(ctx context.Context, t time.Time) (bool, error) {
	if err := o.s.check(ctx, "expireat"); err != nil {
		return false, err
	}
	return expireAt(ctx, o.s.Core(), "expireat", o.s.Key(), o.keys, t, "")
}

// ExpireIf is Lock.ExpireIf for the synchronizer's keys.
func (o *Object) ExpireIf(ctx context.Context, cond ExpireCond, t time.Time) (bool, error) {
	if err := o.s.check(ctx, "expireif"); err != nil {
		return false, err
	}
	return expireAt(ctx, o.s.Core(), "expireif", o.s.Key(), o.keys, t, cond)
}

// ExpireTime is Lock.ExpireTime for the synchronizer's key.
func (o *Object) ExpireTime(ctx context.Context) (time.Time, error) {
	if err := o.s.check(ctx, "expiretime"); err != nil {
		return time.Time{}, err
	}
	return expireTime(ctx, o.s.Core(), "expiretime", o.s.Key())
}
