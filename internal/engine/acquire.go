package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/goredisson/goredisson/internal/transport"
)

// Acquired is what an acquisition did: whether it took a hold, a
// FencedLock's fencing token, its attempts and those that found the lock
// taken.
type Acquired struct {
	Held                bool
	Token               int64
	Attempts, Contended int
}

// Acquire is the one acquisition of every lock kind: it takes a hold for
// ctx's owner within wait (0: one attempt; < 0: until ctx ends) with the
// given lease (<= 0: watchdog). It returns Held false and a nil error when
// the wait ran out. The caller has checked the call (rlock's
// handle.acquire, which also reports it).
func (h *Handle) Acquire(ctx context.Context, wait, lease time.Duration) (Acquired, error) {
	a := h.newAttempt(ctx, wait, lease)
	held, err := a.wait(wait)
	return a.end(ctx, wait, held, err)
}

// end ends the attempt: a fair waiter that did not get the lock leaves the
// queue. It is not inlined: what it builds would sit in the frame of
// Acquire, which stays on a parked waiter's stack (memory per waiter).
//
//go:noinline
func (a *attempt) end(ctx context.Context, wait time.Duration, held bool, err error) (Acquired, error) {
	h := a.h
	if !held && h.kind.fairQueue() && wait != 0 {
		a.leaveQueue()
	}
	return Acquired{Held: held, Token: a.token, Attempts: int(a.attempts), Contended: int(a.contended)}, h.c.ctxOr(ctx, err)
}

// newAttempt starts an acquisition for ctx's owner within wait with lease.
func (h *Handle) newAttempt(ctx context.Context, wait, lease time.Duration) *attempt {
	a := &attempt{h: h, lease: lease, fairWait: h.c.cfg.FairWait}
	a.w.ctx = ctx
	a.key = h.holdKey(h.Field(ctx))
	if h.kind.fairQueue() && wait > 0 {
		a.fairWait = wait // Redisson's threadWaitTime is the tryLock wait when there is one
	}
	if wait > 0 {
		a.w.pace.deadline = time.Now().Add(wait)
		a.w.ctx = transport.BoundCalls(ctx, a.w.pace.deadline)
	}
	return a
}

// attempt is one acquisition in progress.
//
// Its ctx (with the wait's call bound) is w.ctx and the owner's field
// key.field: the attempt fits 240 bytes (memory per waiter).
type attempt struct {
	h         *Handle
	key       holdKey
	lease     time.Duration
	fairWait  time.Duration // a fair waiter's threadWaitTime
	token     int64
	attempts  int32 // acquire scripts sent
	contended int32 // attempts that found the lock taken
	// w is the attempt's waiter (one object with it); w.pace.deadline is
	// the end of the wait (zero: none) from newAttempt on.
	w waiter
}

// wait takes the lock, waiting for unlock messages between attempts (or,
// for a spin lock, a growing backoff; see waiter.run); a pause is bounded
// by the TTL the last attempt saw. The waiter is the attempt's own (a.w):
// one object on the heap.
func (a *attempt) wait(wait time.Duration) (bool, error) {
	a.startWait(wait)
	if a.w.spins {
		return a.w.spin()
	}
	if a.h.kind.wakesPerClass() && wait != 0 {
		return a.waitPerClass()
	}
	defer a.w.close()
	return a.w.run()
}

// waitPerClass is wait's for a faster multilock, whose waiters are woken one
// per class while any waits on the channel. It is a function of its own so
// that wait's frame, which stays on a parked waiter's stack, holds one defer.
//
//go:noinline
func (a *attempt) waitPerClass() (bool, error) {
	defer a.h.c.perClassOn(a.w.channel)()
	defer a.w.close()
	return a.w.run()
}

// startWait readies the attempt's waiter for a wait within wait.
func (a *attempt) startWait(wait time.Duration) {
	h, c := a.h, a.h.c
	a.w.init(c, a.w.ctx, waitSpec{
		channel: h.channel(a.key.field),
		once:    wait == 0,
		queue:   h.kind.queues() && c.holds.count(a.key) == 0,
		shared:  h.kind == KindRead,
		spins:   h.kind.spins(),
	}, a.w.pace.deadline, a)
}

// tryOnce is the waiter's attempt (see trier).
func (a *attempt) tryOnce() tried {
	t := a.try(!a.w.once)
	if t.err == nil && t.pause < 0 && !a.w.spins {
		// No expiry on the key: only an unlock message (or a reconnect)
		// will tell; look again after a watchdog lease. (A spin lock's
		// backoff is bounded by a TTL only when there is one.)
		t.pause = a.h.c.cfg.WatchdogTimeout
	}
	return t
}

// canRetry is the waiter's retry rule (see trier).
func (a *attempt) canRetry(err error) bool { return a.retryable(err) }

// retryable reports whether a failed attempt may be tried again: not when
// ctx is done, the Client closed, or the failure is a refusal.
func (a *attempt) retryable(err error) bool {
	return a.h.c.retryable(a.w.ctx, err)
}

// try runs the acquire script once. ok reports a hold taken (recorded in
// the ledger); otherwise pause bounds the wait before the next attempt
// (negative: the holder set no expiry). reached reports that Redis answered
// (a wake that prompted the attempt was acted on).
func (a *attempt) try(queue bool) tried {
	c := a.h.c
	hs, err := c.holds.enter(a.w.ctx, a.key, c.done)
	if err != nil {
		return tried{err: err}
	}
	if err := c.runUnsettled(a.w.ctx, a.key, hs); err != nil {
		c.holds.exit(a.key, hs)
		return tried{err: err}
	}
	known := hs.known()
	lease := a.lease
	if known > 0 {
		queue = false // a re-entry never joins a fair lock's queue
		if hs.renewed {
			lease = 0 // a watchdog-managed hold stays so until its last Unlock
		}
	}
	o, sent, err := a.send(hs, known, lease, queue)
	if o == nil {
		return tried{err: err} // the hold was exited, or handed to a settle
	}
	defer c.holds.exit(a.key, hs)
	if err := o.ReplyErr(); err != nil {
		if e, ok := err.(transport.ReplyError); ok && strings.Contains(string(e), "NON_REENTRANT_REACQUIRE") {
			err = ErrReentry
		}
		return tried{reached: true, err: err}
	}
	var buf [2]int64
	if r, ok := intsInto(buf[:0], o.V); ok && len(r) > 0 {
		held, late, err := a.took(hs, known, r, lease, sent, o)
		// A hold confirmed too late was given back: the wake that prompted
		// the attempt is not used up (the waiter's Sub hands it on).
		return tried{ok: held, reached: !late, err: err}
	}
	ttl, err := a.refused(hs, known, o.V, queue)
	return tried{pause: ttl, reached: true, err: err}
}

// send runs the acquire script for the entered hold hs. It returns the op
// when Redis replied; otherwise a nil op and the error, with the hold
// exited (the attempt did not run) or handed to a settle (it may have run).
func (a *attempt) send(hs *hold, known int, lease time.Duration, queue bool) (*transport.Op, time.Time, error) {
	h, c := a.h, a.h.c
	n := c.seq.Add(1)
	keep := lease
	if keep <= 0 {
		keep = c.cfg.WatchdogTimeout
	}
	o := h.acquireCall(a.w.ctx, a.key.field, keep, n, a.fairWait, queue, lease <= 0, known)
	sent := time.Now()
	a.attempts++
	if err := c.exec(a.w.ctx, o); err != nil {
		if reason, ok := transport.Abandoned(err); ok {
			c.settleAcquire(h, a.key, hs, o, n, known, a.fairWait)
			return nil, sent, reason
		}
		c.holds.exit(a.key, hs)
		return nil, sent, err
	}
	switch o.Outcome() {
	case transport.NotRun:
		c.holds.exit(a.key, hs)
		return nil, sent, o.ReplyErr()
	case transport.Unknown:
		c.settleAcquire(h, a.key, hs, o, n, known, a.fairWait)
		return nil, sent, o.Err
	}
	return o, sent, nil
}

// took records the hold an acquire script took (r: the owner's holds after
// it, and a FencedLock's token). When Redis counts no more holds than the
// ledger knew before this one, the owner's earlier hold is gone (expired,
// force-unlocked, flushed): that hold is lost (its LostContext ends with
// ErrLockLost), the fresh hold is given back, and the attempt fails with
// ErrLockLost, so that code nested in the lost critical section stops
// instead of going on under a hold it does not have. late reports a hold
// Redis confirmed past its local deadline: it is lost as soon as known, so
// it is given back and the attempt fails with ErrLockLost (see lateTook).
func (a *attempt) took(hs *hold, known int, r []int64, lease time.Duration, sent time.Time, o *transport.Op) (held, late bool, err error) {
	h, c := a.h, a.h.c
	if known > 0 && int(r[0]) <= known {
		c.loseHold(a.key, hs)
		c.holds.update(a.key, func() { hs.count = int(r[0]) })
		err := fmt.Errorf("%w: Redis counts %d holds of this owner, %d with this re-entry; the earlier ones are gone (this acquisition was given back)", ErrLockLost, r[0]-1, known+1)
		rctx := cleanupCall(a.w.ctx) // past the wait's call bound
		_, _, rerr := c.releaseOnce(rctx, h, a.key, hs)
		rctx.stop()
		if rerr != nil {
			err = fmt.Errorf("%w (and giving it back failed: %w)", err, rerr)
		}
		return false, false, err
	}
	if c.taken(a.key, hs, int(r[0]), known > 0, sent, lease, h.kind.extendsOnReentry() && r[0] > 1, h.leaseBox()) {
		return false, true, a.lateTook(hs, known, sent)
	}
	if len(r) > 1 {
		a.token = r[1]
	}
	if o.Unsynced(c.sync) {
		return false, false, c.giveBackUnsynced(a, hs, o)
	}
	return true, false, nil
}

// lateTook fails an acquisition that Redis confirmed past its hold's local
// deadline (sent: its send). A new hold (known 0) was taken at the send,
// but its lease may have run out in Redis by now and another owner may
// hold the lock: the owner must not believe it holds it. A re-entry came
// after the earlier holds' deadline: the hold was lost then (its
// LostContext ended), and the re-entry does not revive it. Either way
// every hold Redis has for the owner is given back (Core.dropLate:
// HoldCount and IsHeldByCurrent then say none, another owner need not wait
// out the lease), and the error is ErrLockLost.
func (a *attempt) lateTook(hs *hold, known int, sent time.Time) error {
	took := time.Since(sent)
	what := "the acquisition"
	if known > 0 {
		what = "a re-entry"
	}
	a.h.c.Logger().Warn("goredisson: "+what+" was confirmed past its lease's local deadline; the hold is lost and given back",
		"lock", a.h.name, "field", a.key.field, "took", took)
	return lateError(what, took, a.h.c.dropLate(a.w.ctx, a.h, a.key, hs))
}

// refused reads the reply of an acquire script that did not take the lock
// and returns how long to wait at most before the next attempt. A re-entry
// refused means the owner's hold is gone and another owner holds the lock:
// the hold is lost and the attempt fails with ErrLockLost.
func (a *attempt) refused(hs *hold, known int, v any, queue bool) (time.Duration, error) {
	pttl, ok := v.(int64)
	if !ok {
		return 0, errUnexpected(v)
	}
	if known > 0 && pttl != -3 {
		a.h.c.loseHold(a.key, hs)
		return 0, fmt.Errorf("%w: the owner's hold is gone and the lock is taken", ErrLockLost)
	}
	a.contended++
	if pttl == -3 || pttl == -2 {
		pttl = 0 // the key went away meanwhile: try again at once
	}
	ttl := time.Duration(pttl) * time.Millisecond
	if a.h.kind.fairQueue() && queue && (ttl < 0 || ttl > a.fairWait/3) {
		// A queued waiter's attempts refresh its place: never sleep longer
		// than a third of its threadWaitTime between two.
		ttl = a.fairWait / 3
	}
	return ttl, nil
}

// giveBackUnsynced gives back a hold that too few replicas confirmed
// (WithReplicaSync) and returns ErrReplicaSync. The caller has entered the
// hold.
func (c *Core) giveBackUnsynced(a *attempt, hs *hold, o *transport.Op) error {
	err := c.syncError(o, "the acquisition was given back")
	rctx := cleanupCall(a.w.ctx) // past the wait's call bound
	defer rctx.stop()
	if _, _, rerr := c.releaseOnce(rctx, a.h, a.key, hs); rerr != nil && !errors.Is(rerr, ErrNotHeld) && !errors.Is(rerr, ErrReplicaSync) {
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
	c.cleanup(a.w.ctx, a.key, func(ctx context.Context, _ *hold) error {
		_, err := c.run(ctx, h.releaseCall(ctx, modeGiveUp, a.key.field, c.seq.Add(1), 0, 0, a.fairWait))
		if err != nil {
			return fmt.Errorf("leaving the fair queue (the entry is purged once its timeout passes): %w", err)
		}
		return nil
	})
}

// ctxOr returns err, preferring ErrClosed or ctx's error (joined with err)
// when they explain it.
func (c *Core) ctxOr(ctx context.Context, err error) error {
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

// intsInto is transport.Ints appending to buf: an acquire reply (the
// holds, a FencedLock's token) fits a caller's array without allocating.
func intsInto(buf []int64, v any) ([]int64, bool) {
	arr, ok := v.([]any)
	if !ok {
		return nil, false
	}
	for _, x := range arr {
		n, ok := x.(int64)
		if !ok {
			return nil, false
		}
		buf = append(buf, n)
	}
	return buf, true
}
