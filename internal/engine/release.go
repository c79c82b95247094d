package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/goredisson/goredisson/internal/layout"
	"github.com/goredisson/goredisson/internal/transport"
	"github.com/goredisson/goredisson/watchdog"
)

// Unlock gives back one hold of ctx's owner. It is cleanup: an ended ctx
// does not stop it; it runs bounded by cleanupTimeout and returns nil when
// the release took effect, ErrNotHeld (naming the owner and the holder)
// when the owner held none, and another error only when the release did
// not, or may not have, taken effect. held is how long the owner held the
// lock, when its last hold went. The caller has checked the call (rlock's
// handle.unlock, which also reports it).
func (h *Handle) Unlock(ctx context.Context) (held time.Duration, err error) {
	c := h.c
	// Unlock ignores ctx's end but not the Client's Close.
	rctx := cleanupCall(ctx)
	defer rctx.stop()
	k := h.holdKey(h.Field(ctx))
	hs, err := c.holds.enter(rctx, k, c.done)
	if err != nil {
		return 0, err
	}
	left, held, err := h.release(rctx, k, hs)
	c.holds.exit(k, hs)
	if err == nil && left == 0 && h.kind.extendsOnReentry() && c.holds.count(h.holdKey(c.Field(ctx))) > 0 {
		// A downgrade: the lock stays in read mode and, as in Redisson,
		// nothing is published; this Client's waiting readers go in at
		// once all the same.
		c.hub.Notify(layout.RWChannel(h.name), layout.ReadUnlockMessage)
	}
	if err == ErrNotHeld {
		err = h.NotHeld(rctx, k.field) // names the owner and the holder
	}
	return held, err
}

// release gives back one hold of the entered hold hs (Unlock): it runs the
// owner's kept settles first, then the release. When the release of the
// last hold fails (or is not tried: a kept settle could not run) and the
// ledger still counts the hold, the hold is given up (see giveUp). left is
// the holds that remain.
func (h *Handle) release(ctx context.Context, k holdKey, hs *hold) (left int, held time.Duration, err error) {
	c := h.c
	last := hs.count == 1
	if err = c.runUnsettled(ctx, k, hs); err == nil {
		// The last release publishes an unlock message: until it comes
		// back, a new waiter of this Client queues behind the waiter it
		// will wake instead of taking the lock first (see waitSpec.queue).
		expect := h.kind.queues() && hs.count == 1
		if expect {
			c.hub.Expect(h.ch())
		}
		left, held, err = c.releaseOnce(ctx, h, k, hs)
		if expect && (err != nil || left != 0) {
			c.hub.Unexpect(h.ch())
		}
	}
	if err != nil && last && hs.count > 0 {
		// As Redisson, stop renewing the hold whatever the outcome, so
		// that it ends within one lease, and settle the release before
		// the owner's next call.
		n := c.seq.Add(1)
		lease := c.releaseLease(hs)
		held = c.giveUp(k, hs, func(ctx context.Context) error {
			_, err := c.settle(ctx, nil, h.settleCall(ctx, modeSettleRelease, k.field, n, 1, lease, 0))
			return err
		})
	}
	return left, held, err
}

// releaseOnce runs the release script for one hold of the entered hold k
// and records what is left. A release that did not run (refused before it
// ran, or never written: a new connection's set-up unanswered) is sent
// again while ctx's bound lasts (see sendAgain). A reply lost on the way
// is settled at once (the release is run if it had not run, never twice),
// within the same bound; if even that cannot reach Redis, the settle is
// kept to run before the owner's next call (a look at the hold included),
// the ledger counts the hold as given back, and the error says the release
// may not have taken effect.
// held is how long the owner held the lock, when its last hold went.
func (c *Core) releaseOnce(ctx context.Context, h *Handle, k holdKey, hs *hold) (left int, held time.Duration, err error) {
	known, wasLost := hs.count, hs.lost()
	lease := c.releaseLease(hs)
	until := againBound(ctx)
	var pause time.Duration
	for {
		n := c.seq.Add(1)
		o := h.releaseCall(ctx, modeRelease, k.field, n, known, lease, 0)
		err := c.exec(ctx, o)
		_, lost := transport.Abandoned(err)
		switch {
		case lost:
		case err != nil:
			return 0, 0, err
		case o.Outcome() == transport.NotRun && c.sendAgain(ctx, o, until, &pause):
			continue
		case o.Outcome() == transport.NotRun:
			return 0, 0, o.ReplyErr()
		case o.Outcome() == transport.Replied:
			left, held, err := c.releaseReply(k, hs, o.V, false)
			if err == nil && o.Unsynced(c.sync) {
				err = c.syncError(o, "released on the primary")
			}
			return left, held, err
		}
		// The reply was lost (or never waited for): settle it now.
		if c.awaitLostThenSettle(ctx, o) {
			return c.releaseReply(k, hs, o.V, false)
		}
		settle := func(ctx context.Context) (any, error) {
			return c.settle(ctx, o, h.settleCall(ctx, modeSettleRelease, k.field, n, known, lease, 0))
		}
		v, serr := settle(ctx)
		if serr == nil {
			// -1 for an owner that had one hold, whose lease was not known
			// lost, means the lost release itself took it.
			return c.releaseReply(k, hs, v, known == 1 && !wasLost)
		}
		settleLater := func(ctx context.Context) error { _, err := settle(ctx); return err }
		if known == 1 {
			held = c.giveUp(k, hs, settleLater)
		} else {
			c.keepUnsettled(k, hs, settleLater)
			held = c.released(k, hs, known-1)
		}
		return 0, held, fmt.Errorf("%w (the release is settled before the owner's next call on this lock, and the lease ends it otherwise): %w", ErrUnknownOutcome, serr)
	}
}

// releaseReply reads a release script's reply: the holds left, or -1 when
// the owner held none (ErrNotHeld, unless noneMeansReleased). An owner that
// held none while the ledger counted holds has lost them: its LostContext
// ends with ErrLockLost.
func (c *Core) releaseReply(k holdKey, hs *hold, v any, noneMeansReleased bool) (int, time.Duration, error) {
	if e, ok := v.(transport.ReplyError); ok {
		if e.WrongType() {
			// Another application overwrote the lock's key: the hold is
			// gone.
			c.loseHold(k, hs)
			c.released(k, hs, 0)
			return 0, 0, fmt.Errorf("%w: %w", ErrLockLost, e)
		}
		return 0, 0, e
	}
	n, ok := v.(int64)
	if !ok {
		return 0, 0, errUnexpected(v)
	}
	if n == -1 && !noneMeansReleased {
		if hs.known() > 0 {
			c.loseHold(k, hs)
		}
		c.released(k, hs, 0)
		return 0, 0, ErrNotHeld
	}
	held := c.released(k, hs, int(n))
	return max(int(n), 0), held, nil
}

// awaitLost waits, within ctx, for the op of a call whose caller stopped
// waiting, and reports whether it got a reply after all.
func (c *Core) awaitLost(ctx context.Context, lost *transport.Op) bool {
	return c.awaitLostFor(ctx, lost, nil)
}

// awaitLostThenSettle is awaitLost before a settle: it waits at most half
// of what is left of ctx's clean-up bound (see againBound), so that the
// settle that follows when no reply came gets the rest (a cut call's reply
// is read within go-redis's read deadline, which may outlast the bound).
func (c *Core) awaitLostThenSettle(ctx context.Context, lost *transport.Op) bool {
	select {
	case <-lost.Done():
		return lost.Outcome() == transport.Replied
	default:
	}
	t := time.NewTimer(time.Until(againBound(ctx)) / 2)
	defer t.Stop()
	return c.awaitLostFor(ctx, lost, t.C)
}

// awaitLostFor is awaitLost ending also when limit fires (nil: never).
func (c *Core) awaitLostFor(ctx context.Context, lost *transport.Op, limit <-chan time.Time) bool {
	select {
	case <-lost.Done():
		return lost.Outcome() == transport.Replied
	case <-limit:
	case <-ctx.Done():
	case <-c.closing(ctx):
	}
	return false
}

// settle runs a settle op made by mk (a release script in a settle mode)
// for the call lost (nil: a release that surely did not run): it raises
// the cancel floor so that the lost call does nothing if it still arrives,
// and repairs the hold count. A lost call that read no floor (it went out
// on a connection the Client can fence: transport.Op.Fenced) is fenced
// first, its connection closed on the server (see fence). It returns the
// settle's reply.
//
// A settle is idempotent (the floor only rises, and the count it repairs
// is compared with the count known before the lost call), so one whose
// reply did not come back, or that did not run, is sent again, on another
// connection, while the clean-up bound lasts (ctx's deadline, at most
// cleanupTimeout: see sendAgain): a server stalled for a few seconds
// (a fork, a slow script) answers within it. go-redis does not check a
// pooled TLS connection for a close before reusing it either: after the
// server closed every connection of a Client the release and then the
// settle both went out on dead ones.
func (c *Core) settle(ctx context.Context, lost *transport.Op, mk func() *transport.Op) (any, error) {
	until := againBound(ctx)
	var pause time.Duration
	fenced := lost == nil || lost.Fenced() == nil
	for {
		o := mk()
		if !fenced {
			key, _ := o.RouteKey()
			if err := c.fence(ctx, lost, key, until); err != nil {
				return nil, err
			}
			fenced = true
		}
		if err := c.exec(ctx, o); err != nil {
			return nil, err
		}
		if o.Outcome() != transport.Replied {
			if c.sendAgain(ctx, o, until, &pause) {
				continue
			}
			return nil, fmt.Errorf("settle: %w", o.ReplyErr())
		}
		if err := o.ReplyErr(); err != nil {
			return nil, err
		}
		return o.V, nil
	}
}

// settleAcquire resolves, in the background, an acquire attempt whose reply
// its caller did not get: the cancel floor makes the attempt a no-op if it
// has not run yet, and a hold it took is given back (a fair waiter's queue
// entry is removed). It takes over the owner's call on the lock (the hold
// was entered): the owner's next call, or a look at the hold (HoldCount,
// IsHeldByCurrent, IsHeldByOwner), waits for it. The settle is sent again
// while the clean-up bound lasts (cleanupTimeout from the attempt's loss):
// nothing else need come for it to take place. If Redis cannot be reached
// within the bound, the settle is kept and run before the owner's next
// call or look, so that the attempt's hold is never counted twice nor
// reported as the owner's.
func (c *Core) settleAcquire(h *Handle, k holdKey, hs *hold, lost *transport.Op, n uint64, known int, fairWait time.Duration) {
	go func() {
		defer c.holds.exit(k, hs)
		ctx, cancel := CleanupCtx(lost.Ctx)
		defer cancel()
		if c.awaitLostThenSettle(ctx, lost) {
			if r, ok := lost.V.(int64); ok && (r == -3 || !h.kind.fairQueue()) {
				return // it did not take the lock (nor join a queue): nothing to undo
			}
		}
		settle := func(ctx context.Context) error {
			v, err := c.settle(ctx, lost, h.settleCall(ctx, modeSettleAcquire, k.field, n, known, c.releaseLease(hs), fairWait))
			if err == nil && v == int64(1) {
				c.Logger().Debug("goredisson: gave back a hold taken by an acquire attempt whose caller had left", "lock", h.name, "field", k.field)
			}
			return err
		}
		if err := settle(ctx); err != nil {
			c.Logger().Warn("goredisson: could not settle an acquire attempt whose reply was lost within the clean-up bound; it is settled before the owner's next call on the lock (HoldCount, IsHeldByCurrent, IsHeldByOwner included)",
				"lock", h.name, "field", k.field, "err", err)
			c.keepUnsettled(k, hs, settle)
		}
	}()
}

// giveUp records that the owner gave up its last hold on the lock with a
// release that failed or whose outcome is unknown: the ledger counts no
// hold, settle is kept for the owner's next call, and the lease is no
// longer renewed but still watched, so the hold's LostContext ends at its
// deadline (it ends when the settle runs, if that comes first). It returns
// how long the owner held the lock.
func (c *Core) giveUp(k holdKey, hs *hold, settle func(context.Context) error) (held time.Duration) {
	var e *watchdog.Entry
	kd := Kind(0)
	c.holds.update(k, func() {
		e, hs.entry = hs.entry, nil
		hs.count, hs.renewed, kd = 0, false, hs.kind
		if e != nil {
			held = time.Since(hs.since)
		}
		hs.unsettled = append(hs.unsettled, func(ctx context.Context) error {
			if e != nil {
				// Ended before the release can take effect: nobody else
				// can take the lock while its LostContext is live.
				e.Lose()
			}
			return settle(ctx)
		})
	})
	if e == nil {
		return 0
	}
	e.Drain()
	if e.Err() == nil {
		c.observeHold("free", k, kd, held)
	}
	return held
}

// keepUnsettled keeps a settle that could not reach Redis for the owner's
// next call on the lock.
func (c *Core) keepUnsettled(k holdKey, hs *hold, settle func(context.Context) error) {
	c.holds.update(k, func() { hs.unsettled = append(hs.unsettled, settle) })
}
