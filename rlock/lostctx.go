package rlock

import (
	"context"

	"github.com/goredisson/goredisson/internal/engine"
)

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
	var w *engine.LossWatch
	if lw, ok := l.(lossWatcher); ok {
		w = lw.watchLoss(ctx)
	}
	name := nameOf(l)
	return engine.LossContext(ctx, w, func(why error) error { return opErr("lost", name, why) },
		opErr("lostcontext", name, ErrNotHeld))
}

// lossWatcher is implemented by this package's lock types: watchLoss
// returns the hold of ctx's owner to watch, or nil when the owner holds
// none.
type lossWatcher interface {
	watchLoss(ctx context.Context) *engine.LossWatch
}

func nameOf(l Locker) string {
	if l == nil {
		return ""
	}
	return l.Name()
}

// watchLoss watches the hold of ctx's owner on the lock (nil: none).
func (h *handle) watchLoss(ctx context.Context) *engine.LossWatch {
	if h == nil {
		return nil
	}
	return h.WatchLoss(ctx)
}

func (l *Lock) watchLoss(ctx context.Context) *engine.LossWatch { return l.handle().watchLoss(ctx) }
func (f *FencedLock) watchLoss(ctx context.Context) *engine.LossWatch {
	return f.handle().watchLoss(ctx)
}
