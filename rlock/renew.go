package rlock

import (
	"context"

	"github.com/goredisson/goredisson/internal/layout"
	"github.com/goredisson/goredisson/watchdog"
)

// renew is the watchdog's RenewFunc: one renewal script call per lease,
// all handed to the batcher at once, so that a chunk of leases costs one
// pipelined round trip. The Client's first renewal (and the first after a
// failed one: Redis may come back without its scripts) sends SCRIPT LOAD
// of the renewal scripts ahead of them in the same pipeline: on a server
// that has not run them yet, the calls then find them cached instead of
// failing with NOSCRIPT and being sent again with their source (a second
// round trip, with the script's text once per lease). Not on a Redis
// Cluster: there a keyless command in a pipeline goes to one master, not
// to those of the leases.
func (c *Client) renew(ctx context.Context, leases []watchdog.Lease) ([]watchdog.Status, error) {
	ops := make([]*op, len(leases))
	for i, l := range leases {
		switch d := l.Data.(leaseData); d.renew {
		case renewRead:
			ops[i] = newScriptOp(ctx, readRenewScript, []any{l.Key, layout.ReadTimeoutPrefix(l.Key, l.Field)}, c.watchdogMs, l.Field)
		case renewFaster:
			ops[i] = newScriptOp(ctx, fasterRenewScript, []any{d.key}, append([]any{c.watchdogMs, l.Field}, d.values...)...)
		case renewPermit:
			ops[i] = newScriptOp(ctx, permitsScript, d.keys, "update", c.pubArg, d.values[0], c.watchdogMs)
		default:
			ops[i] = newScriptOp(ctx, renewScript, []any{l.Key}, c.watchdogMs, l.Field)
		}
	}
	send := ops
	if !c.cluster && !c.renewLoaded.Swap(true) {
		send = append([]*op{newOp(ctx, "script", "load", renewScript.Src), newOp(ctx, "script", "load", readRenewScript.Src)}, ops...)
	}
	c.send.SubmitAll(send)
	out := make([]watchdog.Status, len(leases))
	for i, o := range ops {
		select {
		case <-o.Done():
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.done:
			return nil, ErrClosed
		}
		re, _ := o.V.(replyError)
		switch n, _ := o.V.(int64); {
		case o.Outcome() == replied && re.WrongType():
			// The key was overwritten by another application: the hold
			// is gone.
			out[i] = watchdog.Lost
		case o.Outcome() != replied || o.ReplyErr() != nil:
			out[i] = watchdog.Failed
			c.renewLoaded.Store(false)
		case n == 1:
			out[i] = watchdog.Renewed
		default:
			out[i] = watchdog.Lost
		}
	}
	return out, nil
}

// LostContext returns a context that ends when ctx's owner loses l, with a
// cause wrapping ErrLockLost (or ErrClosed when the Client closed first); it
// is cancelled at once, with cause ErrNotHeld, when the owner holds none.
//
// It is live only while the hold's local deadline (the last acquisition or
// renewal Redis confirmed, sent at t: t + lease - 1 % - 2 ms on this
// process's monotonic clock) has not passed: every look at its Err, Done or
// Value, and so context.Cause, after the deadline sees the loss, whatever
// the Go scheduler runs first after the process was paused (SIGSTOP, a
// stopped VM, a long GC). No other client can take the lock before that
// deadline, given clock rates within 1 % of Redis's. A renewal confirmed
// after the deadline does not revive it. A context derived from it with
// context.WithValue looks the same way; one derived with
// context.WithCancel, WithTimeout or WithDeadline (or AfterFunc) ends when
// the deadline timer fires or a look at this context sees the loss, a
// moment later: loop on this context itself. Its Deadline is ctx's (the
// lease's deadline moves with every renewal). stop ends it and releases
// what it registered; after the hold is released it stays live until stop
// or ctx's end.
func LostContext(ctx context.Context, l Locker) (lctx context.Context, stop context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	var w *lossWatch
	if lw, ok := l.(lossWatcher); ok {
		w = lw.watchLoss(ctx)
	}
	name := nameOf(l)
	return newLossCtx(ctx, w, func(why error) error { return opErr("lost", name, why) },
		opErr("lostcontext", name, ErrNotHeld))
}

// lossWatcher is implemented by this package's lock types: watchLoss
// returns the hold of ctx's owner to watch, or nil when the owner holds
// none.
type lossWatcher interface {
	watchLoss(ctx context.Context) *lossWatch
}

func nameOf(l Locker) string {
	if l == nil {
		return ""
	}
	return l.Name()
}

// watchLoss watches the hold of ctx's owner on the lock.
func (h *handle) watchLoss(ctx context.Context) *lossWatch {
	if h == nil || h.c == nil || ctx == nil {
		return nil
	}
	e := h.c.holds.entry(h.holdKey(h.field(ctx)))
	if e == nil {
		return nil
	}
	return &lossWatch{entry: e}
}

func (l *Lock) watchLoss(ctx context.Context) *lossWatch       { return l.handle().watchLoss(ctx) }
func (f *FencedLock) watchLoss(ctx context.Context) *lossWatch { return f.handle().watchLoss(ctx) }
