package rlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/goredisson/goredisson/internal/layout"
)

// Redisson's RExpirable on the locks (every RLock is a RedissonExpirable)
// and the semaphores: the time to live of all of an object's keys at once.
// Details and the keys of each kind: docs/api.md.

var expireScript = mustScript("expire")

// ExpireCond is the condition of ExpireIf (Redis 7.0+).
type ExpireCond string

// The conditions of ExpireIf, as PEXPIREAT's NX, XX, GT and LT.
const (
	IfNotSet  ExpireCond = "NX" // only a key without expiry [expireIfNotSet]
	IfSet     ExpireCond = "XX" // only a key with an expiry [expireIfSet]
	IfGreater ExpireCond = "GT" // only later than the key's expiry [expireIfGreater]
	IfLess    ExpireCond = "LT" // only earlier than the key's expiry [expireIfLess]
)

// expiryKeys are the keys Redisson's expire, expireAt and clearExpire touch
// for the lock's kind (RedissonFairLock's and RedissonFencedLock's
// overrides; the name alone for the others).
func (h *handle) expiryKeys() []string {
	switch h.kind {
	case kindFenced:
		return []string{h.name, layout.Token(h.name)}
	case kindFair, kindNonReentrantFair:
		return []string{h.name, layout.Queue(h.aux()), layout.Timeouts(h.aux())}
	}
	return []string{h.name}
}

// expire is Expire, ExpireAt and ExpireIf of every lock and synchronizer:
// cmd "pexpire" (ms: time to live) or "pexpireat" (ms: Unix time).
func (c *Client) expire(ctx context.Context, op, name string, keys []string, cmd string, ms int64, cond ExpireCond) (bool, error) {
	switch cond {
	case "", IfNotSet, IfSet, IfGreater, IfLess:
	default:
		return false, opErr(op, name, fmt.Errorf("%w: expire condition %q", ErrInvalidArgument, string(cond)))
	}
	if cmd == "pexpire" && ms < 1 {
		return false, opErr(op, name, fmt.Errorf("%w: time to live below 1ms", ErrInvalidArgument))
	}
	n, err := c.runInt(ctx, newScriptOp(ctx, expireScript, boxAll(keys), cmd, ms, string(cond)))
	if err != nil && cond != "" {
		err = needsRedis7(err, "an expire condition")
	}
	return n == 1, opErr(op, name, err)
}

// expireAt is ExpireAt and ExpireIf: the zero time is ErrInvalidArgument.
func (c *Client) expireAt(ctx context.Context, op, name string, keys []string, t time.Time, cond ExpireCond) (bool, error) {
	if t.IsZero() {
		return false, opErr(op, name, fmt.Errorf("%w: zero expiry time", ErrInvalidArgument))
	}
	return c.expire(ctx, op, name, keys, "pexpireat", t.UnixMilli(), cond)
}

// expireTime is PEXPIRETIME of name: the zero time when the key does not
// exist or has no expiry.
func (c *Client) expireTime(ctx context.Context, op, name string) (time.Time, error) {
	ms, err := c.commandInt(ctx, "pexpiretime", name)
	if err != nil {
		return time.Time{}, opErr(op, name, needsRedis7(err, "PEXPIRETIME"))
	}
	if ms < 0 {
		return time.Time{}, nil
	}
	return time.UnixMilli(ms), nil
}

// clearExpire is ClearExpire: PERSIST every key.
func (c *Client) clearExpire(ctx context.Context, op, name string, keys []string) (bool, error) {
	n, err := c.runInt(ctx, newScriptOp(ctx, objectScript, boxAll(keys), "persist"))
	return n == 1, opErr(op, name, err)
}

// needsRedis7 reports an error reply of a server older than Redis 7.0
// (PEXPIRETIME unknown, PEXPIRE with a condition a wrong number of
// arguments) as errors.ErrUnsupported.
func needsRedis7(err error, what string) error {
	if err == nil {
		return nil
	}
	s := strings.ToLower(err.Error())
	if strings.Contains(s, "unknown command") || strings.Contains(s, "wrong number of arg") {
		return fmt.Errorf("%w: %s needs Redis 7.0 or later (%v)", errors.ErrUnsupported, what, err)
	}
	return err
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
	op := h.opName("expire")
	if err := h.check(ctx, "expire"); err != nil {
		return false, err
	}
	return h.c.expire(ctx, op, h.name, h.expiryKeys(), cmd, ms, cond)
}

func (h *handle) expireAtOp(ctx context.Context, t time.Time, cond ExpireCond) (bool, error) {
	op := "expireat"
	if cond != "" {
		op = "expireif"
	}
	if err := h.check(ctx, op); err != nil {
		return false, err
	}
	return h.c.expireAt(ctx, h.opName(op), h.name, h.expiryKeys(), t, cond)
}

func (h *handle) expireTimeOp(ctx context.Context) (time.Time, error) {
	if err := h.check(ctx, "expiretime"); err != nil {
		return time.Time{}, err
	}
	return h.c.expireTime(ctx, h.opName("expiretime"), h.name)
}

func (h *handle) clearExpireOp(ctx context.Context) (bool, error) {
	if err := h.check(ctx, "clearexpire"); err != nil {
		return false, err
	}
	return h.c.clearExpire(ctx, h.opName("clearexpire"), h.name, h.expiryKeys())
}

// ExpireAt is Lock.ExpireAt for the synchronizer's keys.
func (o *Object) ExpireAt(ctx context.Context, t time.Time) (bool, error) {
	if err := o.s.check(ctx, "expireat"); err != nil {
		return false, err
	}
	return o.s.c.expireAt(ctx, "expireat", o.s.name, o.keys, t, "")
}

// ExpireIf is Lock.ExpireIf for the synchronizer's keys.
func (o *Object) ExpireIf(ctx context.Context, cond ExpireCond, t time.Time) (bool, error) {
	if err := o.s.check(ctx, "expireif"); err != nil {
		return false, err
	}
	return o.s.c.expireAt(ctx, "expireif", o.s.name, o.keys, t, cond)
}

// ExpireTime is Lock.ExpireTime for the synchronizer's key.
func (o *Object) ExpireTime(ctx context.Context) (time.Time, error) {
	if err := o.s.check(ctx, "expiretime"); err != nil {
		return time.Time{}, err
	}
	return o.s.c.expireTime(ctx, "expiretime", o.s.name)
}
