package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/goredisson/goredisson/internal/layout"
)

// What the synchronizers (Semaphore, PermitExpirableSemaphore,
// CountDownLatch) share: a name on a Client, a check of each call, and a
// safety bound on waits.

// syncHandle is a synchronizer's name on a Client.
type syncHandle struct {
	c    *Client
	name string // the Redis key: the name under the NameMapper
	kind string // for errors and events: "semaphore", ...
	// logical is the name the synchronizer was made with (Name), nameErr
	// what the NameMapper made of it.
	logical string
	nameErr error
}

// newSyncHandle maps name (WithNameMapper) and returns the handle and the
// name the release derives its auxiliary keys from.
func newSyncHandle(c *Client, name, kind string) (syncHandle, string) {
	m := c.mapName(name, kindLock, kind)
	return syncHandle{c: c, name: m.key, kind: kind, logical: name, nameErr: m.err}, m.aux
}

// check validates a call: the handle, ctx, and the Client's state.
func (s *syncHandle) check(ctx context.Context, op string) error {
	switch {
	case s == nil || s.c == nil:
		return opErr(op, "", fmt.Errorf("%w: nil client", ErrInvalidArgument))
	case s.name == "":
		return opErr(op, "", fmt.Errorf("%w: empty name", ErrInvalidArgument))
	case ctx == nil:
		return opErr(op, s.name, fmt.Errorf("%w: nil context", ErrInvalidArgument))
	case s.nameErr != nil:
		return opErr(op, s.logical, s.nameErr)
	case s.c.cluster && !layout.SlotSafe(s.name):
		return opErr(op, s.name, fmt.Errorf("%w: on Redis Cluster a name with a stray '{' or '}' puts its auxiliary keys in other slots; use a hash tag such as {jobs:42}", ErrInvalidArgument))
	case s.c.closed.Load():
		return opErr(op, s.name, ErrClosed)
	}
	return nil
}

// waitMillis is a wait as Redisson's TimeUnit (and Duration) conversion
// makes it: whole milliseconds, so that a wait in (0, 1ms), a computed
// deadline's remainder say, is 0: one attempt. A negative wait stays.
func waitMillis(wait time.Duration) time.Duration {
	if wait > 0 {
		return wait.Truncate(time.Millisecond)
	}
	return wait
}

// run runs one of the synchronizer's scripts whose outcome the caller may
// lose without harm, or must report as unknown.
func (s *syncHandle) run(ctx context.Context, sc *script, keys []string, args ...any) (int64, error) {
	return s.c.runInt(ctx, newScriptOp(ctx, sc, boxAll(keys), args...))
}

// runUnsure runs one of the synchronizer's scripts that must not run twice
// (a release, a count-down): a call whose reply was lost, or that its
// caller stopped waiting for, is ErrUnknownOutcome. One that did not run
// (refused before it ran, or never written: a new connection's set-up
// unanswered or cut) is sent again while ctx's bound lasts (see sendAgain).
func (s *syncHandle) runUnsure(ctx context.Context, sc *script, keys []string, args ...any) (int64, error) {
	until, pause := againBound(ctx), time.Duration(0)
	o := newScriptOp(ctx, sc, boxAll(keys), args...)
	err := s.c.exec(ctx, o)
	for err == nil && o.Outcome() == notRun && s.c.sendAgain(ctx, o, until, &pause) {
		o = newScriptOp(ctx, sc, boxAll(keys), args...)
		err = s.c.exec(ctx, o)
	}
	if reason, ok := abandoned(err); ok {
		return 0, unknownOutcome(reason)
	}
	if err == nil && o.Outcome() == unknown {
		return 0, unknownOutcome(o.Err)
	}
	if err != nil {
		return 0, err
	}
	if err := o.ReplyErr(); err != nil {
		return 0, err
	}
	n, ok := o.V.(int64)
	if !ok {
		return 0, errUnexpected(o.V)
	}
	return n, nil
}

// unknownOutcome is the error of a call whose outcome is unknown.
func unknownOutcome(cause error) error {
	return fmt.Errorf("%w: %w", ErrUnknownOutcome, cause)
}

// runInt sends o and returns its reply, which must be an integer.
func (c *Client) runInt(ctx context.Context, o *op) (int64, error) {
	v, err := c.run(ctx, o)
	if err != nil {
		return 0, err
	}
	n, ok := v.(int64)
	if !ok {
		return 0, errUnexpected(v)
	}
	return n, nil
}

// safetyPause bounds a synchronizer's wait between two attempts when no
// message is due (Redisson waits for the message alone): a permit set by
// hand, without a message, is found within it.
func (s *syncHandle) safetyPause() time.Duration { return s.c.opts.watchdogTimeout }

// waitDeadline returns when a wait ends (zero: until ctx ends).
func waitDeadline(wait time.Duration) time.Time {
	if wait > 0 {
		return time.Now().Add(wait)
	}
	return time.Time{}
}

// The operations Redisson's RObject and RExpirable give every
// synchronizer, on the synchronizer's keys (its name, and for a
// PermitExpirableSemaphore also its {name}:timeout): a synchronizer
// implements them with these.

// del deletes keys and reports whether any existed [delete()].
func (s *syncHandle) del(ctx context.Context, keys []string) (bool, error) {
	if err := s.check(ctx, "delete"); err != nil {
		return false, err
	}
	args := make([]any, 0, 1+len(keys))
	args = append(args, "del")
	for _, k := range keys {
		args = append(args, k)
	}
	n, err := s.c.commandInt(ctx, args...)
	return n > 0, opErr("delete", s.name, err)
}

// exists reports whether the synchronizer's own key (its name) exists
// [isExists()].
func (s *syncHandle) exists(ctx context.Context) (bool, error) {
	if err := s.check(ctx, "isexists"); err != nil {
		return false, err
	}
	n, err := s.c.commandInt(ctx, "exists", s.name)
	return n == 1, opErr("isexists", s.name, err)
}

// expire sets the time to live of every key that exists and reports
// whether it set any [expire(Duration)]; ttl below 1 ms is
// ErrInvalidArgument.
func (s *syncHandle) expire(ctx context.Context, keys []string, ttl time.Duration) (bool, error) {
	if err := s.check(ctx, "expire"); err != nil {
		return false, err
	}
	if ttl < time.Millisecond {
		return false, opErr("expire", s.name, fmt.Errorf("%w: time to live %v is below 1ms", ErrInvalidArgument, ttl))
	}
	v, err := s.run(ctx, objectScript, keys, "expire", ttl.Milliseconds())
	return v == 1, opErr("expire", s.name, err)
}

// clearExpire removes the time to live of every key and reports whether
// any had one [clearExpire()].
func (s *syncHandle) clearExpire(ctx context.Context, keys []string) (bool, error) {
	if err := s.check(ctx, "clearexpire"); err != nil {
		return false, err
	}
	v, err := s.run(ctx, objectScript, keys, "persist")
	return v == 1, opErr("clearexpire", s.name, err)
}

// remainTTL returns the time to live of the synchronizer's own key: 0 when
// it does not exist, NoExpiry when it has none [remainTimeToLive()].
func (s *syncHandle) remainTTL(ctx context.Context) (time.Duration, error) {
	if err := s.check(ctx, "remainttl"); err != nil {
		return 0, err
	}
	ms, err := s.c.commandInt(ctx, "pttl", s.name)
	switch {
	case err != nil:
		return 0, opErr("remainttl", s.name, err)
	case ms == -2:
		return 0, nil
	case ms == -1:
		return NoExpiry, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// Object is a synchronizer's key with Redisson's RObject/RExpirable calls.
type Object struct {
	s    syncHandle
	keys []string // the synchronizer's keys (Delete, Expire, ClearExpire)
}

func newObject(h syncHandle, keys ...string) Object {
	return Object{s: h, keys: append([]string{h.name}, keys...)}
}

// Name returns the name: the Redis key unless WithNameMapper maps it.
func (o *Object) Name() string { return o.s.nameOr() }

// IsExists reports whether the synchronizer's key exists [isExists()].
func (o *Object) IsExists(ctx context.Context) (bool, error) { return o.s.exists(ctx) }

// Delete deletes the synchronizer's keys; true if any existed [delete()].
func (o *Object) Delete(ctx context.Context) (bool, error) { return o.s.del(ctx, o.keys) }

// Expire makes the keys expire ttl from now [expire(Duration)].
func (o *Object) Expire(ctx context.Context, ttl time.Duration) (bool, error) {
	return o.s.expire(ctx, o.keys, ttl)
}

// ClearExpire removes the keys' time to live [clearExpire()].
func (o *Object) ClearExpire(ctx context.Context) (bool, error) {
	return o.s.clearExpire(ctx, o.keys)
}

// RemainTTL returns the key's TTL: 0 if none, NoExpiry [remainTimeToLive()].
func (o *Object) RemainTTL(ctx context.Context) (time.Duration, error) { return o.s.remainTTL(ctx) }
