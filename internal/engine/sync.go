package engine

import (
	"context"
	"time"

	"github.com/goredisson/goredisson/internal/layout"
	"github.com/goredisson/goredisson/internal/transport"
)

// What the synchronizers (Semaphore, PermitExpirableSemaphore,
// CountDownLatch) share: a name on a Client, their calls that must not run
// twice, a safety bound on their waits, and Redisson's RObject/RExpirable
// calls on their keys. Their scripts' calls are in permits.go.

// SyncHandle is a synchronizer's name on a Client.
type SyncHandle struct {
	c    *Core
	name string // the Redis key: the name under the NameMapper
	kind string // for errors and events: "semaphore", ...
	// logical is the name the synchronizer was made with (Name), aux the
	// name its auxiliary keys derive from (a permit semaphore's timeouts),
	// nameErr what the NameMapper made of the name.
	logical, aux string
	nameErr      error
}

// NewSyncHandle maps name (WithNameMapper) and returns the handle of a
// synchronizer of kind "semaphore", "permitsemaphore" or "countdownlatch".
func NewSyncHandle(c *Core, name, kind string) SyncHandle {
	m := c.mapName(name, KindLock, kind)
	return SyncHandle{c: c, name: m.key, kind: kind, logical: name, aux: m.aux, nameErr: m.err}
}

// Core returns the engine of the synchronizer's Client (nil: none).
func (s *SyncHandle) Core() *Core { return s.c }

// Key returns the synchronizer's Redis key: its name under the NameMapper.
func (s *SyncHandle) Key() string { return s.name }

// Kind returns the synchronizer's kind, as events and errors name it.
func (s *SyncHandle) Kind() string { return s.kind }

// Logical returns the name the synchronizer was made with.
func (s *SyncHandle) Logical() string { return s.logical }

// NameErr returns what the NameMapper made of the name (nil: nothing).
func (s *SyncHandle) NameErr() error { return s.nameErr }

// ObjectKeys returns the keys Redisson's RObject calls act on: the name,
// and a permit semaphore's {name}:timeout.
func (s *SyncHandle) ObjectKeys() []string {
	if s.kind == "permitsemaphore" {
		return []string{s.name, layout.PermitTimeouts(s.aux)}
	}
	return []string{s.name}
}

// run runs one of the synchronizer's scripts whose outcome the caller may
// lose without harm, or must report as unknown.
func (s *SyncHandle) run(ctx context.Context, sc *transport.Script, keys []string, args ...any) (int64, error) {
	return s.c.runInt(ctx, transport.NewScriptOp(ctx, sc, boxAll(keys), args...))
}

// runUnsure runs one of the synchronizer's scripts that must not run twice
// (a release, a count-down): a call whose reply was lost, or that its
// caller stopped waiting for, is ErrUnknownOutcome. One that did not run
// (refused before it ran, or never written: a new connection's set-up
// unanswered or cut) is sent again while ctx's bound lasts (see sendAgain).
func (s *SyncHandle) runUnsure(ctx context.Context, sc *transport.Script, keys []string, args ...any) (int64, error) {
	until, pause := againBound(ctx), time.Duration(0)
	o := transport.NewScriptOp(ctx, sc, boxAll(keys), args...)
	err := s.c.exec(ctx, o)
	for err == nil && o.Outcome() == transport.NotRun && s.c.sendAgain(ctx, o, until, &pause) {
		o = transport.NewScriptOp(ctx, sc, boxAll(keys), args...)
		err = s.c.exec(ctx, o)
	}
	if reason, ok := transport.Abandoned(err); ok {
		return 0, unknownOutcome(reason)
	}
	if err == nil && o.Outcome() == transport.Unknown {
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

// runInt sends o and returns its reply, which must be an integer.
func (c *Core) runInt(ctx context.Context, o *transport.Op) (int64, error) {
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
func (s *SyncHandle) safetyPause() time.Duration { return s.c.cfg.WatchdogTimeout }

// wait is a synchronizer's wait for messages on channel within wait (0: one
// attempt; < 0: until ctx ends): try makes each attempt, with ctx bounded
// by the wait's end (see transport.BoundCalls). See waiter.run.
func (s *SyncHandle) wait(ctx context.Context, channel string, wait time.Duration, try func(ctx context.Context) tried) (bool, error) {
	deadline := waitDeadline(wait)
	ctx = transport.BoundCalls(ctx, deadline)
	ok, err := s.c.waitFor(ctx, &funcWait{waitSpec: waitSpec{channel: channel, once: wait == 0}, deadline: deadline,
		try:       func() tried { return try(ctx) },
		retryable: func(err error) bool { return s.c.retryable(ctx, err) },
	})
	return ok, s.c.ctxOr(ctx, err)
}

// waitDeadline returns when a wait ends (zero: until ctx ends).
func waitDeadline(wait time.Duration) time.Time {
	if wait > 0 {
		return time.Now().Add(wait)
	}
	return time.Time{}
}

// The operations Redisson's RObject and RExpirable give every
// synchronizer, on the synchronizer's keys (ObjectKeys); rlock's Object
// checks and reports them.

// Delete deletes keys and reports whether any existed [delete()].
func (s *SyncHandle) Delete(ctx context.Context, keys []string) (bool, error) {
	args := make([]any, 0, 1+len(keys))
	args = append(args, "del")
	for _, k := range keys {
		args = append(args, k)
	}
	n, err := s.c.commandInt(ctx, args...)
	return n > 0, err
}

// Exists reports whether the synchronizer's own key (its name) exists
// [isExists()].
func (s *SyncHandle) Exists(ctx context.Context) (bool, error) {
	n, err := s.c.commandInt(ctx, "exists", s.name)
	return n == 1, err
}

// Expire sets the time to live of every key that exists and reports
// whether it set any [expire(Duration)].
func (s *SyncHandle) Expire(ctx context.Context, keys []string, ttl time.Duration) (bool, error) {
	v, err := s.run(ctx, objectScript, keys, "expire", ttl.Milliseconds())
	return v == 1, err
}

// PTTL returns the PTTL of the synchronizer's own key: -2 when it does not
// exist, -1 when it has no expiry [remainTimeToLive()].
func (s *SyncHandle) PTTL(ctx context.Context) (int64, error) {
	return s.c.commandInt(ctx, "pttl", s.name)
}

// Get returns the count under the synchronizer's key: a semaphore's
// permits, a latch's count (0 when there is none).
func (s *SyncHandle) Get(ctx context.Context) (int64, error) {
	return s.c.commandInt(ctx, "get", s.name)
}
