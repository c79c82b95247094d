package engine

import (
	"context"
	"sync"
	"time"

	"github.com/goredisson/goredisson/internal/transport"
)

// Clean-up: the calls made after the caller's context may have ended (an
// Unlock, a synchronizer's release, the settle of a call whose reply was
// lost, a fair waiter leaving the queue), their contexts, and running one
// of an owner's on a lock (Core.cleanup).

// cleanupTimeout bounds what is done after the caller's context may have
// ended: an Unlock, the settle of a call whose reply was lost, leaving a
// fair lock's queue.
const cleanupTimeout = 5 * time.Second

// CleanupCtx returns a context for clean-up that keeps ctx's values but
// not its cancellation, bounded by cleanupTimeout. Calls made with it run
// even after the Client closed (see Core.exec): a clean-up that was due
// when Close came (a fair waiter leaving the queue, the settle of a call
// whose reply was lost) still takes place, in the background.
// Neither it nor cleanupCall keeps a wait's call bound (see boundCalls):
// a clean-up after a bounded wait gets cleanupTimeout, not transport.CallGrace.
func CleanupCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithValue(transport.Unbound(context.WithoutCancel(ctx)), cleanupKey{}, true), cleanupTimeout)
}

// cleanupCall returns the context of a call that is its caller's clean-up
// (Unlock, a semaphore's Release, a latch's CountDown, usually deferred):
// ctx's values without its end, bounded by cleanupTimeout. Unlike
// cleanupCtx, the Client's Close still ends it. The caller calls stop
// once the call returned.
func cleanupCall(ctx context.Context) deadlineOnly {
	return deadlineOnly{&cleanupContext{values: ctx, deadline: time.Now().Add(cleanupTimeout)}}
}

// deadlineOnly marks a context that, while a call runs on it, ends only at
// its deadline (its stop is called once the call returned): the inline
// transport bounds the call's I/O by the deadline instead of watching it.
// One pointer, so that it is a context.Context without an allocation.
type deadlineOnly struct{ *cleanupContext }

// EndsOnlyAtDeadline marks d as a transport.DeadlineOnly context.
func (deadlineOnly) EndsOnlyAtDeadline() {}

// cleanupContext is cleanupCall's context: ctx's values (but a wait's call
// bound, see unbound) and a deadline, without ctx's end. It is built in one
// allocation; its Done channel and timer are made only when asked for.
type cleanupContext struct {
	values   context.Context
	deadline time.Time

	mu    sync.Mutex
	done  chan struct{}
	timer *time.Timer
	err   error
}

func (c *cleanupContext) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *cleanupContext) Value(key any) any {
	if transport.IsBoundKey(key) {
		return nil // as unbound
	}
	if key == cancelCtxKey {
		return nil // as context.WithoutCancel: the parent's end is not ours
	}
	return c.values.Value(key)
}

// cancelCtxKey is package context's own key for a context's end (which
// context.Cause and WithCancel ask Value for), found once with a probe.
var cancelCtxKey = func() (k any) {
	_ = context.Cause(keyProbe{&k})
	return k
}()

// keyProbe records the key Value is asked for.
type keyProbe struct{ key *any }

func (keyProbe) Deadline() (time.Time, bool) { return time.Time{}, false }
func (keyProbe) Done() <-chan struct{}       { return nil }
func (keyProbe) Err() error                  { return context.Canceled }
func (p keyProbe) Value(key any) any {
	*p.key = key
	return nil
}

func (c *cleanupContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		switch d := time.Until(c.deadline); {
		case c.err != nil:
			close(c.done)
		case d <= 0:
			c.endLocked(context.DeadlineExceeded)
		default:
			c.timer = time.AfterFunc(d, func() { c.end(context.DeadlineExceeded) })
		}
	}
	return c.done
}

func (c *cleanupContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil && !time.Now().Before(c.deadline) {
		c.endLocked(context.DeadlineExceeded)
	}
	return c.err
}

func (c *cleanupContext) String() string { return "rlock.cleanupCall" }

// stop ends the context (context.Canceled) and frees its timer.
func (c *cleanupContext) stop() { c.end(context.Canceled) }

func (c *cleanupContext) end(err error) {
	c.mu.Lock()
	c.endLocked(err)
	c.mu.Unlock()
}

func (c *cleanupContext) endLocked(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	if c.timer != nil {
		c.timer.Stop()
	}
}

// cleanupKey marks a context made by cleanupCtx.
type cleanupKey struct{}

func isCleanup(ctx context.Context) bool { return ctx.Value(cleanupKey{}) != nil }

// closing returns what ends waits of a call made with ctx besides ctx: the
// Client's Close, unless the call is a clean-up.
func (c *Core) closing(ctx context.Context) <-chan struct{} {
	if isCleanup(ctx) {
		return nil
	}
	return c.done
}

// cleanup runs a clean-up call of one owner on one lock: inline when ctx
// is still live, else (or when that fails) on a goroutine of its own, with
// a context that ignores ctx's end and is bounded by cleanupTimeout. The
// owner's next call on the lock waits for it. It returns f's error if the
// last try failed.
func (c *Core) cleanup(ctx context.Context, k holdKey, f func(ctx context.Context, hs *hold) error) {
	if ctx.Err() == nil && !c.closed.Load() {
		ectx := ctx
		if d, ok := transport.CallBound(ctx); ok {
			// A bounded wait's caller does not wait for an earlier
			// clean-up (a settle that Redis keeps waiting) past the bound.
			var cancel context.CancelFunc
			ectx, cancel = context.WithDeadline(ctx, d.Add(transport.CallGrace))
			defer cancel()
		}
		if hs, err := c.holds.enter(ectx, k, c.done); err == nil {
			err = f(ctx, hs)
			c.holds.exit(k, hs)
			if err == nil {
				return
			}
		}
	}
	go func() {
		bctx, cancel := CleanupCtx(ctx)
		defer cancel()
		hs, err := c.holds.enter(bctx, k, c.closing(bctx))
		if err != nil {
			return
		}
		defer c.holds.exit(k, hs)
		if err := f(bctx, hs); err != nil {
			c.Logger().Warn("goredisson: clean-up failed", "lock", k.name, "field", k.field, "err", err)
		}
	}()
}
