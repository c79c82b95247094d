package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/goredisson/goredisson/internal/engine"
)

// Extend sets the fixed lease of ctx's owner's hold to lease from now.
func (l *Lock) Extend(ctx context.Context, lease time.Duration) error {
	return l.handle().extend(ctx, lease)
}

// Extend is Lock.Extend.
func (f *FencedLock) Extend(ctx context.Context, lease time.Duration) error {
	return f.handle().extend(ctx, lease)
}

func (h *handle) extend(ctx context.Context, lease time.Duration) error {
	start := time.Now()
	err := h.check(ctx, "extend")
	if err == nil && lease < time.Millisecond {
		err = opErr(h.OpName("extend"), h.Key(), fmt.Errorf("%w: lease %v: Extend needs a fixed lease of at least 1ms", ErrInvalidArgument, lease))
	}
	if err == nil {
		err = h.SetLease(ctx, lease)
		if err == ErrNotHeld {
			err = h.NotHeld(ctx, h.Field(ctx)) // names the owner and the holder
		}
		err = opErr(h.OpName("extend"), h.Key(), err)
	}
	h.observe(ctx, engine.Event{Op: "extend", Start: start, Err: err})
	return err
}
