package rlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// forever is the wait of Lock and LockLease: until held or ctx ends.
const forever time.Duration = -1

// maxBackoff caps the pause between attempts while Redis fails.
const maxBackoff = time.Second

// acquire is the one acquisition of every lock kind: it takes a hold for
// ctx's owner within wait (0: one attempt; forever: until ctx ends) with
// the given lease (<= 0: watchdog) and returns the fencing token of a
// FencedLock. It returns (0, false, nil) when the wait ran out.
func (h *handle) acquire(ctx context.Context, op string, wait, lease time.Duration) (token int64, held bool, err error) {
	start := time.Now()
	if err := h.checkAcquire(ctx, op, wait, lease); err != nil {
		h.observe(ctx, Event{Op: op, Start: start, Err: err})
		return 0, false, err
	}
	a := &attempt{h: h, ctx: ctx, lease: lease, fairWait: h.fairWait}
	a.field = h.field(ctx)
	a.key = holdKey{h.name, a.field}
	if h.kind == kindFair && wait > 0 {
		a.fairWait = wait // Redisson's threadWaitTime is the tryLock wait when there is one
	}
	if wait > 0 {
		a.deadline = time.Now().Add(wait)
	}
	if h.kind == kindSpin {
		held, err = a.spin(wait)
	} else {
		held, err = a.wait(wait)
	}
	if !held && h.kind == kindFair && wait != 0 {
		a.leaveQueue()
	}
	err = opErr(h.opName(op), h.name, h.c.ctxOr(ctx, err))
	h.observe(ctx, Event{Op: op, Start: start, Attempts: a.attempts, Contended: a.contended, Acquired: held, Err: err})
	return a.token, held, err
}

// checkAcquire validates an acquisition's handle and arguments.
func (h *handle) checkAcquire(ctx context.Context, op string, wait, lease time.Duration) error {
	if err := h.check(ctx, op); err != nil {
		return err
	}
	switch {
	case lease > 0 && lease < time.Millisecond:
		return opErr(h.opName(op), h.name, fmt.Errorf("%w: lease %v is below Redis's 1ms resolution (use <= 0 for a watchdog lease)", ErrInvalidArgument, lease))
	case wait > 0 && wait < time.Millisecond:
		return opErr(h.opName(op), h.name, fmt.Errorf("%w: wait %v is below 1ms (use <= 0 for one attempt, Lock to wait until held)", ErrInvalidArgument, wait))
	}
	return nil
}

// attempt is one acquisition in progress.
type attempt struct {
	h         *handle
	ctx       context.Context
	field     string
	key       holdKey
	lease     time.Duration
	fairWait  time.Duration // a fair waiter's threadWaitTime
	deadline  time.Time     // end of the wait (zero: none)
	token     int64
	attempts  int // acquire scripts sent
	contended int // attempts that found the lock taken
}

// wait takes the lock, waiting for unlock messages between attempts (see
// Client.waitFor); a pause is bounded by the TTL the last attempt saw.
func (a *attempt) wait(wait time.Duration) (bool, error) {
	c := a.h.c
	return c.waitFor(a.ctx, waitSpec{
		channel:  a.h.channel(a.field),
		once:     wait == 0,
		deadline: a.deadline,
		try: func() (bool, time.Duration, bool, error) {
			held, ttl, reached, err := a.try(wait != 0)
			if err == nil && ttl < 0 {
				// No expiry on the key: only an unlock message (or a
				// reconnect) will tell; look again after a watchdog lease.
				ttl = c.opts.watchdogTimeout
			}
			return held, ttl, reached, err
		},
		retryable: a.retryable,
		queue:     a.h.queues() && c.holds.count(a.key) == 0,
	})
}

// retryable reports whether a failed attempt may be tried again: not when
// ctx is done, the Client closed, or the failure is a refusal.
func (a *attempt) retryable(err error) bool {
	return a.h.c.retryable(a.ctx, err)
}

// spin takes a SpinLock: it retries with exponential backoff and full
// jitter until it holds, the wait runs out or ctx ends. A pause never
// outlasts the TTL the last attempt saw.
func (a *attempt) spin(wait time.Duration) (bool, error) {
	c, b := a.h.c, a.h.spin
	bound := b.initial
	var lastErr error
	for first := true; ; first = false {
		held, ttl, _, err := a.try(false)
		switch {
		case held:
			return true, nil
		case err != nil && (first || !a.retryable(err)):
			return false, err
		case wait == 0:
			return false, nil
		}
		lastErr = err
		pause := rand.N(bound + 1)
		bound = min(2*bound, b.max)
		if err == nil && ttl >= 0 {
			pause = min(pause, ttl)
		}
		remain, ok := remaining(a.deadline)
		if !ok {
			return false, waitEnded(nil, lastErr)
		}
		if remain >= 0 {
			pause = min(pause, remain)
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-a.ctx.Done():
			t.Stop()
			return false, waitEnded(a.ctx.Err(), lastErr)
		case <-c.done:
			t.Stop()
			return false, ErrClosed
		}
	}
}

// try runs the acquire script once. held reports a hold taken (recorded in
// the ledger); otherwise ttl bounds the wait before the next attempt
// (negative: the holder set no expiry). reached reports that Redis answered
// (a wake that prompted the attempt was acted on).
func (a *attempt) try(queue bool) (held bool, ttl time.Duration, reached bool, err error) {
	h, c := a.h, a.h.c
	hs, err := c.holds.enter(a.ctx, a.key, c.done)
	if err != nil {
		return false, 0, false, err
	}
	if err := c.runUnsettled(a.ctx, a.key, hs); err != nil {
		c.holds.exit(a.key, hs)
		return false, 0, false, err
	}
	known := hs.known()
	n := c.seq.Add(1)
	keep := a.lease
	if keep <= 0 {
		keep = c.opts.watchdogTimeout
	}
	o := h.acquireCall(a.ctx, a.field, keep, n, a.fairWait, queue)
	sent := time.Now()
	a.attempts++
	if err := c.exec(a.ctx, o); err != nil {
		if reason, ok := abandoned(err); ok {
			c.settleAcquire(h, a.key, hs, o, n, known, a.fairWait)
			return false, 0, false, reason
		}
		c.holds.exit(a.key, hs)
		return false, 0, false, err
	}
	switch o.outcome() {
	case notRun:
		c.holds.exit(a.key, hs)
		return false, 0, false, o.replyErr()
	case unknown:
		c.settleAcquire(h, a.key, hs, o, n, known, a.fairWait)
		return false, 0, false, o.err
	}
	defer c.holds.exit(a.key, hs)
	if err := o.replyErr(); err != nil {
		if e, ok := err.(replyError); ok && strings.Contains(string(e), "NON_REENTRANT_REACQUIRE") {
			err = ErrReentry
		}
		return false, 0, true, err
	}
	if r, ok := ints(o.v); ok && len(r) > 0 {
		c.taken(a.key, hs, int(r[0]), sent, a.lease, h.kind == kindWrite && r[0] > 1, leaseData{h.renewKind(), h.kind})
		if len(r) > 1 {
			a.token = r[1]
		}
		if o.unsynced(c.opts.sync) {
			return false, 0, true, c.giveBackUnsynced(a, hs, o)
		}
		return true, 0, true, nil
	}
	pttl, ok := o.v.(int64)
	if !ok {
		return false, 0, true, errUnexpected(o.v)
	}
	a.contended++
	if pttl == -3 || pttl == -2 {
		pttl = 0 // the key went away meanwhile: try again at once
	}
	ttl = time.Duration(pttl) * time.Millisecond
	if h.kind == kindFair && queue && (ttl < 0 || ttl > a.fairWait/3) {
		// A queued waiter's attempts refresh its place: never sleep longer
		// than a third of its threadWaitTime between two.
		ttl = a.fairWait / 3
	}
	return false, ttl, true, nil
}

// giveBackUnsynced gives back a hold that too few replicas confirmed
// (WithReplicaSync) and returns ErrReplicaSync. The caller has entered the
// hold.
func (c *Client) giveBackUnsynced(a *attempt, hs *hold, o *op) error {
	err := c.syncError(o, "the acquisition was given back")
	if _, _, rerr := c.releaseOnce(a.ctx, a.h, a.key, hs); rerr != nil && !errors.Is(rerr, ErrNotHeld) && !errors.Is(rerr, ErrReplicaSync) {
		return fmt.Errorf("%w (and giving it back failed: %w)", err, rerr)
	}
	return err
}

// leaveQueue takes a fair waiter that did not get the lock out of the
// queue (Redisson's acquireFailed), so that it holds up nobody. It runs in
// the background: the caller's ctx may have ended, and the owner's next
// call on the lock waits for it. If Redis cannot be reached, the entry is
// purged once its timeout passes.
func (a *attempt) leaveQueue() {
	h, c := a.h, a.h.c
	c.cleanup(a.ctx, a.key, func(ctx context.Context, _ *hold) error {
		_, err := c.run(ctx, h.releaseCall(ctx, modeGiveUp, a.field, c.seq.Add(1), 0, 0, a.fairWait))
		if err != nil {
			return fmt.Errorf("leaving the fair queue (the entry is purged once its timeout passes): %w", err)
		}
		return nil
	})
}

// ctxOr returns err, preferring ErrClosed or ctx's error (joined with err)
// when they explain it.
func (c *Client) ctxOr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if c.closed.Load() && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}
