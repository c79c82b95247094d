package rlock

import (
	"context"
	"errors"
	"sync"

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

// LostContext returns a context that ends when ctx's owner loses l.
func LostContext(ctx context.Context, l Locker) (lctx context.Context, stop context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	lctx, cancel := context.WithCancelCause(ctx)
	w, ok := l.(lossWatcher)
	if !ok {
		cancel(opErr("lostcontext", nameOf(l), ErrNotHeld))
		return lctx, func() { cancel(context.Canceled) }
	}
	stopped := make(chan struct{})
	lost, why := w.lossOf(ctx, stopped)
	if lost == nil {
		close(stopped)
		cancel(opErr("lostcontext", nameOf(l), ErrNotHeld))
		return lctx, func() { cancel(context.Canceled) }
	}
	go func() {
		select {
		case <-lost:
			cancel(opErr("lost", nameOf(l), why()))
		case <-stopped:
		case <-lctx.Done():
		}
	}()
	var once sync.Once
	return lctx, func() {
		once.Do(func() { close(stopped) })
		cancel(context.Canceled)
	}
}

// lossWatcher is implemented by this package's lock types: lossOf returns a
// channel closed when the hold of ctx's owner is lost, and the reason, or
// nil when the owner holds none.
type lossWatcher interface {
	lossOf(ctx context.Context, stop <-chan struct{}) (lost <-chan struct{}, why func() error)
}

func nameOf(l Locker) string {
	if l == nil {
		return ""
	}
	return l.Name()
}

// lossOf watches the hold of ctx's owner on the lock.
func (h *handle) lossOf(ctx context.Context) (<-chan struct{}, func() error) {
	if h == nil || h.c == nil || ctx == nil {
		return nil, nil
	}
	e := h.c.holds.entry(h.holdKey(h.field(ctx)))
	if e == nil {
		return nil, nil
	}
	return e.Lost(), func() error {
		if errors.Is(e.Err(), watchdog.ErrClosed) {
			return ErrClosed
		}
		return ErrLockLost
	}
}

func (l *Lock) lossOf(ctx context.Context, _ <-chan struct{}) (<-chan struct{}, func() error) {
	return l.handle().lossOf(ctx)
}
func (f *FencedLock) lossOf(ctx context.Context, _ <-chan struct{}) (<-chan struct{}, func() error) {
	return f.handle().lossOf(ctx)
}
