package rlock

import (
	"context"

	"github.com/goredisson/goredisson/internal/engine"
)

// LostContext returns a context that ends when ctx's owner loses l, cause
// ErrLockLost or ErrClosed (ErrNotHeld at once: no hold); see docs/api.md.
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
