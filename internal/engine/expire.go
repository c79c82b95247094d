package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/goredisson/goredisson/internal/layout"
	"github.com/goredisson/goredisson/internal/transport"
)

// Redisson's RExpirable on the locks (every RLock is a RedissonExpirable)
// and the synchronizers: the time to live of all of an object's keys at
// once. rlock checks the arguments and reports the call; the keys of each
// kind are in docs/api.md.

// ExpiryKeys are the keys Redisson's expire, expireAt and clearExpire
// touch for the lock's kind (RedissonFairLock's and RedissonFencedLock's
// overrides; the name alone for the others).
func (h *Handle) ExpiryKeys() []string {
	switch h.kind {
	case KindFenced:
		return []string{h.name, layout.Token(h.name)}
	case KindFair, KindNonReentrantFair:
		return []string{h.name, layout.Queue(h.Aux()), layout.Timeouts(h.Aux())}
	}
	return []string{h.name}
}

// Expire sets the expiry of every key that exists, and reports whether it
// set any: cmd "pexpire" (ms: time to live) or "pexpireat" (ms: Unix
// time), if cond holds ("": always; "NX", "XX", "GT", "LT": Redis 7.0+).
func (c *Core) Expire(ctx context.Context, keys []string, cmd string, ms int64, cond string) (bool, error) {
	n, err := c.runInt(ctx, transport.NewScriptOp(ctx, expireScript, boxAll(keys), cmd, ms, cond))
	if err != nil && cond != "" {
		err = needsRedis7(err, "an expire condition")
	}
	return n == 1, err
}

// ExpireTime is PEXPIRETIME of key: the zero time when the key does not
// exist or has no expiry.
func (c *Core) ExpireTime(ctx context.Context, key string) (time.Time, error) {
	ms, err := c.commandInt(ctx, "pexpiretime", key)
	if err != nil {
		return time.Time{}, needsRedis7(err, "PEXPIRETIME")
	}
	if ms < 0 {
		return time.Time{}, nil
	}
	return time.UnixMilli(ms), nil
}

// ClearExpire is PERSIST of every key: it reports whether any had an
// expiry.
func (c *Core) ClearExpire(ctx context.Context, keys []string) (bool, error) {
	n, err := c.runInt(ctx, transport.NewScriptOp(ctx, objectScript, boxAll(keys), "persist"))
	return n == 1, err
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
