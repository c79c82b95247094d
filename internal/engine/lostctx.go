package engine

import (
	"context"
	"errors"

	"github.com/goredisson/goredisson/watchdog"
)

// The loss signal (LostContext, KeptPermit.LostContext): a context that is
// live only while the hold's local deadline has not passed.
//
// A goroutine that waited for the watchdog's Lost channel and then
// cancelled the context raced the holder after a pause (SIGSTOP, a stopped
// VM, a long GC): the resumed holder could look at Err before that
// goroutine ran, and see the context live after another client had taken
// the lock. lossCtx instead asks the hold at each look: its Err, Done and
// Value (and so context.Cause) check the watchdog entry's local deadline
// on the monotonic clock (watchdog.Entry.IsLost: two atomic loads and a
// clock reading while the hold is live) and cancel the context with the
// loss as cause once it has passed. Contexts derived with
// context.WithCancel, WithTimeout or WithDeadline have their own state:
// they end when lossCtx is cancelled, by a look at it or by the entry's
// AfterLost function, which the Scheduler's deadline timer (or a renewal
// that finds the hold gone, or Close) runs. No goroutine waits meanwhile.

// LossWatch is the hold (or group of holds) behind a loss signal.
type LossWatch struct {
	entry *watchdog.Entry // one hold's lease (nil for a group)
	parts []*LossWatch    // a group's holds
	spare int             // how many parts a group may lose and still hold
}

// EntryLoss returns the watch of one hold's lease.
func EntryLoss(e *watchdog.Entry) *LossWatch { return &LossWatch{entry: e} }

// GroupLoss returns the watch of a group's holds, lost once more than
// spare of parts are.
func GroupLoss(parts []*LossWatch, spare int) *LossWatch {
	return &LossWatch{parts: parts, spare: spare}
}

// Lost reports whether the hold is lost and why (ErrLockLost, or ErrClosed
// when the Client closed first). For a single hold it costs what
// watchdog.Entry.IsLost does while the hold is live.
func (w *LossWatch) Lost() (bool, error) {
	if w.entry != nil {
		if !w.entry.IsLost() {
			return false, nil
		}
		if errors.Is(w.entry.Err(), watchdog.ErrClosed) {
			return true, ErrClosed
		}
		return true, ErrLockLost
	}
	losses := 0
	for _, p := range w.parts {
		if lost, why := p.Lost(); lost {
			if losses++; losses > w.spare {
				return true, why
			}
		}
	}
	return false, nil
}

// entries calls f with the watchdog entry of every hold.
func (w *LossWatch) entries(f func(*watchdog.Entry)) {
	if w.entry != nil {
		f(w.entry)
	}
	for _, p := range w.parts {
		p.entries(f)
	}
}

// lossKey is the Value key under which a lossCtx finds the nearest lossCtx
// it was made from.
type lossKey struct{}

// lossCtx is the context a loss signal returns: a context.WithCancelCause
// of the caller's context that also ends, with the loss as its cause, at the
// first look after the hold is lost.
type lossCtx struct {
	context.Context // context.WithCancelCause(parent): Deadline, children, cause
	cancel          context.CancelCauseFunc
	w               *LossWatch
	because         func(error) error // the cause for ErrLockLost or ErrClosed
	// up is the loss signal this one was made from when the parent ends
	// exactly when it does (the parent is it, or a context.WithValue of
	// it): then a look at this one is a look at it too.
	up *lossCtx
}

// LossContext returns the loss signal of w on parent (w nil: ctx's owner
// holds none, and the context is cancelled at once with notHeld as cause).
func LossContext(parent context.Context, w *LossWatch, because func(error) error, notHeld error) (context.Context, context.CancelFunc) {
	inner, cancel := context.WithCancelCause(parent)
	stop := func() { cancel(context.Canceled) }
	if w == nil {
		cancel(notHeld)
		return inner, stop
	}
	c := &lossCtx{Context: inner, cancel: cancel, w: w, because: because}
	if up, ok := parent.Value(lossKey{}).(*lossCtx); ok && parent.Done() == up.Context.Done() {
		c.up = up
	}
	var unregister []func() bool
	w.entries(func(e *watchdog.Entry) {
		unregister = append(unregister, e.AfterLost(func() { _ = c.Err() }))
	})
	// Once the context ends (loss, stop, parent), nothing is left
	// registered on holds that live on.
	context.AfterFunc(inner, func() {
		for _, u := range unregister {
			u()
		}
	})
	_ = c.Err()
	return c, stop
}

// Err returns the context's error: the parent's or stop's, or
// context.Canceled once the hold is lost (context.Cause says why). Once the
// hold's local deadline has passed it is never nil, whatever ran first.
func (c *lossCtx) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if c.up != nil && c.up.Err() != nil {
		c.cancel(context.Cause(c.up))
		return c.Context.Err()
	}
	if lost, why := c.w.Lost(); lost {
		c.cancel(c.because(why))
		return c.Context.Err()
	}
	return nil
}

// Done returns the context's done channel, closed already when the hold is
// lost.
func (c *lossCtx) Done() <-chan struct{} {
	_ = c.Err()
	return c.Context.Done()
}

// Value returns the parent's value for key, after the look Err makes (so
// that context.Cause, which asks Value, sees a loss at once).
func (c *lossCtx) Value(key any) any {
	_ = c.Err()
	if key == (lossKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// String names the context for fmt, as the context package's own do.
func (c *lossCtx) String() string { return "rlock.LostContext" }

// WatchLoss watches the hold of ctx's owner on the lock.
func (h *Handle) WatchLoss(ctx context.Context) *LossWatch {
	if h == nil || h.c == nil || ctx == nil {
		return nil
	}
	e := h.c.holds.entry(h.holdKey(h.Field(ctx)))
	if e == nil {
		return nil
	}
	return &LossWatch{entry: e}
}
