package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/goredisson/goredisson/internal/layout"
	"github.com/goredisson/goredisson/watchdog"
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
		err = opErr(h.opName("extend"), h.name, fmt.Errorf("%w: lease %v: Extend needs a fixed lease of at least 1ms", ErrInvalidArgument, lease))
	}
	if err == nil {
		err = h.setLease(ctx, lease)
		if err == ErrNotHeld {
			err = h.notHeld(ctx, h.field(ctx)) // names the owner and the holder
		}
		err = opErr(h.opName("extend"), h.name, err)
	}
	h.observe(ctx, Event{Op: "extend", Start: start, Err: err})
	return err
}

// setLease runs Extend for ctx's owner once no other call of the owner on
// the lock is in flight.
func (h *handle) setLease(ctx context.Context, lease time.Duration) error {
	c := h.c
	k := h.holdKey(h.field(ctx))
	hs, err := c.holds.enter(ctx, k, c.done)
	if err != nil {
		return err
	}
	defer c.holds.exit(k, hs)
	if err := c.runUnsettled(ctx, k, hs); err != nil {
		return err
	}
	switch {
	case !h.extendable():
		return fmt.Errorf("%w: Extend is not offered on a FasterMultiLock (its values' leases are set by each acquisition)", ErrInvalidArgument)
	case hs.known() == 0:
		return ErrNotHeld
	case hs.renewed:
		return fmt.Errorf("%w: the hold is watchdog-managed (the watchdog renews it); Extend sets fixed leases", ErrInvalidArgument)
	}
	sent := time.Now()
	v, err := c.script(ctx, extendScript, []string{h.name, layout.ReadTimeoutPrefix(h.name, k.field)},
		lease.Milliseconds(), k.field, h.extendMode(), layout.ReadKeyPrefix(h.name))
	if err != nil {
		// It may have run: until Redis says, the hold lasts until the
		// earlier of the two deadlines.
		c.holds.update(k, func() {
			if hs.entry != nil {
				if d := watchdog.Deadline(sent, lease); d.Before(hs.entry.Deadline()) {
					hs.entry.Reset(d)
				}
			}
		})
		return err
	}
	if v != int64(1) {
		c.loseHold(k, hs)
		return ErrNotHeld
	}
	return h.extended(ctx, k, hs, sent, lease)
}

// extended records an Extend that Redis confirmed: the hold's local
// deadline is sent + lease, less the allowance. Confirmed past a deadline
// (the hold's before, or the new one: a reply that took longer than the
// lease), the hold is lost, not moved: every hold the owner has is given
// back (Client.dropLate) and Extend fails with ErrLockLost.
func (h *handle) extended(ctx context.Context, k holdKey, hs *hold, sent time.Time, lease time.Duration) error {
	c := h.c
	var late, closed bool
	c.holds.update(k, func() {
		if e := hs.entry; e != nil {
			late = !e.Reset(watchdog.Deadline(sent, lease)) || e.IsLost()
			closed = late && e.Err() == watchdog.ErrClosed
		}
	})
	switch {
	case closed:
		return ErrClosed
	case !late:
		return nil
	}
	took := time.Since(sent)
	c.logger().Warn("goredisson: an Extend was confirmed past its lease's local deadline; the hold is lost and given back",
		"lock", h.name, "field", k.field, "took", took)
	return lateError("the Extend", took, c.dropLate(ctx, h, k, hs))
}
