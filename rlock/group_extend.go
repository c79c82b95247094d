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
		return nil
	case notHeld == len(g.locks):
		return opErr("extend", g.name(), ErrNotHeld)
	}
	return opErr("extend", g.name(), errors.Join(errs...))
}
