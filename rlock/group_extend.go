package rlock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// extender is a lock with Extend: *Lock and *FencedLock (and the groups).
type extender interface {
	Extend(ctx context.Context, lease time.Duration) error
}

// Extend is Lock.Extend on every lock; all must succeed.
func (m *MultiLock) Extend(ctx context.Context, lease time.Duration) error {
	return m.group().extend(ctx, lease, 0)
}

// Extend is Lock.Extend on every master at once; a quorum must succeed.
func (r *RedLock) Extend(ctx context.Context, lease time.Duration) error {
	if r == nil {
		return r.group().extend(ctx, lease, 0)
	}
	return r.group().extend(ctx, lease, r.attemptTimeout)
}

// extend runs Extend on every lock: one after the other, or (each > 0) all
// at once with each call bounded by each. It succeeds when g.need did.
// ErrNotHeld when no lock was held at all.
func (g *group) extend(ctx context.Context, lease, each time.Duration) error {
	ctx, err := g.start(ctx, "extend", 0, lease)
	if err != nil {
		return err
	}
	if lease < time.Millisecond {
		return opErr("extend", g.name(), fmt.Errorf("%w: lease %v: Extend needs a fixed lease of at least 1ms", ErrInvalidArgument, lease))
	}
	errs := make([]error, len(g.locks))
	one := func(i int) {
		x, ok := g.locks[i].(extender)
		if !ok {
			errs[i] = fmt.Errorf("%w: lock %d (%T) has no Extend", ErrInvalidArgument, i, g.locks[i])
			return
		}
		cctx := ctx
		if each > 0 {
			var cancel context.CancelFunc
			cctx, cancel = context.WithTimeout(ctx, each)
			defer cancel()
		}
		if err := x.Extend(cctx, lease); err != nil {
			errs[i] = fmt.Errorf("lock %d: %w", i, err)
		}
	}
	if each > 0 {
		done := make(chan struct{})
		for i := range g.locks {
			go func() { one(i); done <- struct{}{} }()
		}
		for range g.locks {
			<-done
		}
	} else {
		for i := range g.locks {
			one(i)
		}
	}
	return opErr("extend", g.name(), g.extendResult(ctx, errs))
}

// extendResult is what a group's Extend returns, given each lock's error:
// nil when g.need locks were extended and the group still holds (a lock
// extended early may have reached its new deadline before the last one
// answered: Extend on a MultiLock runs one lock after the other);
// ErrNotHeld when no lock was held at all.
func (g *group) extendResult(ctx context.Context, errs []error) error {
	ok, notHeld := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrNotHeld):
			notHeld++
		}
	}
	switch {
	case ok >= g.need:
		return g.stillHeld(ctx, "Extend")
	case notHeld == len(g.locks):
		return ErrNotHeld
	}
	return errors.Join(errs...)
}

// stillHeld reports, after a call that took or extended the group's
// locks, whether the group still holds by its local deadlines: no more of
// its locks lost than it may lose (none for a MultiLock). It returns nil
// when it does (or its locks are not this package's: nothing to look at),
// else the loss (ErrLockLost, or ErrClosed) saying which call came too late.
func (g *group) stillHeld(ctx context.Context, what string) error {
	w := g.watchLoss(ctx)
	if w == nil {
		return nil
	}
	if lost, why := w.lost(); lost {
		return fmt.Errorf("%w: a lock's lease reached its local deadline before %s of the others was confirmed: the group no longer holds", why, what)
	}
	return nil
}
