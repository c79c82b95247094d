package rlock

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math/bits"
	"sync"
	"time"

	"github.com/goredisson/goredisson/watchdog"
)

// The ledger: what a Client knows of the holds its owners have, and the
// order of their calls.
//
// The calls of one owner on one lock (acquire attempts, releases, and the
// settles of calls whose reply was lost) never overlap within a Client: each
// waits until the previous one is done (settled, if its reply was lost). So
// when a call starts, the ledger's hold count is what Redis has, unless the
// lock was lost meanwhile, and a settle can tell from the count whether a
// lost call took effect (see lib/settle.lua).

// holdKey names one owner's hold on one lock.
type holdKey struct{ name, field string }

// hold is one owner's hold on one lock as the Client knows it.
type hold struct {
	count int       // holds taken and not given back, as far as known
	since time.Time // when the first of the holds was taken
	// renewed is set once one of the holds was watchdog-managed: from then
	// on until the last Unlock the whole hold is (every re-entry and
	// release keeps the watchdog lease, and the watchdog renews it), so
	// that no fixed lease of another of its holds can cut it short.
	renewed bool
	// entry watches the lease (and renews a watchdog lease) while count > 0.
	entry *watchdog.Entry
	kind  kind // the lock's kind, for the events of entry's hold
	// busy is set while a call of this owner on this lock is in flight or
	// being settled; waiters (made by the first who waits) is closed when it
	// ends.
	busy    bool
	waiters chan struct{}
	// unsettled are settles of lost calls that could not reach Redis yet,
	// oldest first; the owner's next call on the lock runs them first.
	unsettled []func(context.Context) error
}

// lost reports whether the hold's lease is known to be lost: its local
// deadline passed, or the watchdog found it gone, or the Client closed.
func (h *hold) lost() bool {
	return h.entry != nil && h.entry.IsLost()
}

// ledger maps holds, sharded to keep many owners on many locks from
// contending on one mutex.
type ledger struct {
	seed   maphash.Seed
	shards [32]ledgerShard
}

type ledgerShard struct {
	mu sync.Mutex
	m  map[holdKey]*hold
	// peak is the most holds m had since it was made: a map never gives
	// back the room a burst of calls made (see exit).
	peak int
}

func newLedger() *ledger {
	l := &ledger{seed: maphash.MakeSeed()}
	for i := range l.shards {
		l.shards[i].m = make(map[holdKey]*hold)
	}
	return l
}

func (l *ledger) shard(k holdKey) *ledgerShard {
	// Two one-shot hashes: a maphash.Hash would copy both strings into
	// its buffer first.
	h := maphash.String(l.seed, k.name) ^ bits.RotateLeft64(maphash.String(l.seed, k.field), 1)
	return &l.shards[h%uint64(len(l.shards))]
}

// enter waits until no other call of the owner on the lock is in flight,
// then marks one in flight and returns the hold. It fails with ctx's error,
// or ErrClosed once closed is closed. The caller must call exit.
func (l *ledger) enter(ctx context.Context, k holdKey, closed <-chan struct{}) (*hold, error) {
	s := l.shard(k)
	s.mu.Lock()
	for {
		h := s.m[k]
		if h == nil {
			h = &hold{}
			s.m[k] = h
			s.peak = max(s.peak, len(s.m))
		}
		if !h.busy {
			h.busy = true
			s.mu.Unlock()
			return h, nil
		}
		if h.waiters == nil {
			h.waiters = make(chan struct{})
		}
		w := h.waiters
		s.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-closed:
			return nil, ErrClosed
		}
		s.mu.Lock()
	}
}

// exit ends the call that enter began, and forgets the hold when nothing
// is left of it.
func (l *ledger) exit(k holdKey, h *hold) {
	s := l.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	h.busy = false
	if h.waiters != nil {
		close(h.waiters)
		h.waiters = nil
	}
	if h.count == 0 && h.entry == nil && len(h.unsettled) == 0 && s.m[k] == h {
		delete(s.m, k)
		if s.peak >= 64 && len(s.m) <= s.peak/8 {
			// A burst left: give its room back (memory per waiter: 10,000
			// waiters' first attempts left ~65 B each, docs/benchmarks.md).
			// Amortized: at least 7/8 of peak deletes since the map grew.
			m := make(map[holdKey]*hold, len(s.m)) // not maps.Clone: it keeps the room
			for k, h := range s.m {
				m[k] = h
			}
			s.m = m
			s.peak = len(s.m)
		}
	}
}

// update changes a hold under its shard's lock (for state that readers
// outside the owner's calls look at: the watchdog entry).
func (l *ledger) update(k holdKey, f func()) {
	s := l.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

// entry returns the watchdog entry of a hold, or nil.
func (l *ledger) entry(k holdKey) *watchdog.Entry {
	s := l.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.m[k]; h != nil {
		return h.entry
	}
	return nil
}

// since returns when the hold's first hold was taken (zero: none known).
func (l *ledger) since(k holdKey) time.Time {
	s := l.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.m[k]; h != nil {
		return h.since
	}
	return time.Time{}
}

// count returns the holds the ledger counts for a hold (0: none known).
func (l *ledger) count(k holdKey) int {
	s := l.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.m[k]; h != nil && !h.lost() {
		return h.count
	}
	return 0
}

// known returns the holds the ledger counts for a hold being entered: 0
// when its lease is known lost (Redis has dropped it, or will before anyone
// else can take the lock).
func (h *hold) known() int {
	if h.lost() {
		return 0
	}
	return h.count
}

// taken records an acquisition confirmed by Redis: the owner now has count
// holds (the script's own count, so the ledger follows Redis). Its lease,
// sent at sent, lasts lease (fixed) or keep (a watchdog lease, renewed);
// extend is set when the script extended the lease by lease instead of
// setting it (a write re-entry).
// data is the hold's leaseData, boxed (handle.leaseBox).
//
// A re-entry (reentry: the ledger counted holds at its send) confirms the
// hold's watchdog entry; otherwise the attempt counted none (none known, or
// the hold was lost) and a new hold begins, with an entry of its own.
//
// It reports late when the confirmation came past the hold's local
// deadline: a new hold's (sent + its lease, less the allowance; then no
// watchdog entry is made and no hold begins), or, for a re-entry, the
// earlier holds' (the entry is lost: a confirmation after the deadline
// does not revive it, nor does it begin a new hold). The ledger then counts
// the holds Redis has, and the caller gives them back (see
// Client.dropLate).
func (c *Client) taken(k holdKey, h *hold, count int, reentry bool, sent time.Time, lease time.Duration, extend bool, data any) (late bool) {
	kd := data.(leaseData).kind
	renewed := lease <= 0
	keep := lease
	if renewed {
		keep = c.opts.watchdogTimeout
	}
	deadline := watchdog.Deadline(sent, keep)
	began := false
	defer func() {
		if began {
			c.observeHold("hold", k, kd, 0)
		}
	}()
	c.holds.update(k, func() {
		h.count = count
		if reentry && h.entry != nil {
			h.renewed = h.renewed || renewed
			if extend {
				deadline = h.entry.Deadline().Add(keep - watchdog.Allowance(keep))
			}
			h.entry.Confirm(deadline, renewed)
			late = h.entry.IsLost() && h.entry.Err() != watchdog.ErrClosed
			return
		}
		if h.entry != nil {
			h.entry.Stop() // a lost hold's (the attempt counted none)
			h.entry = nil
		}
		h.since, h.renewed, h.kind = sent, renewed, kd
		if late = !time.Now().Before(deadline); late {
			return
		}
		h.entry = c.wd.Add(watchdog.Lease{Key: k.name, Field: k.field, Data: data}, deadline, renewed)
		// A hold begins unless the watchdog had closed: then the entry is
		// lost already and no "lost" will be sent for it.
		began = h.entry.Err() == nil
	})
	return late
}

// dropLate gives back every hold of the entered hold hs after an
// acquisition or Extend that Redis confirmed past the hold's local
// deadline (see taken): the owner is told the hold is lost, so nothing of
// it may stay in Redis for HoldCount, IsHeldByCurrent or the next owner to
// find. The releases run with a clean-up context of ctx (past a wait's call
// bound and ctx's end, within cleanupTimeout; a lost reply is settled as
// Unlock's is). When one fails, the ledger counts no hold all the same
// (the rest ends with its lease) and the failure is returned.
func (c *Client) dropLate(ctx context.Context, h *handle, k holdKey, hs *hold) error {
	rctx := cleanupCall(ctx)
	defer rctx.stop()
	for n := hs.count; n > 0; n-- {
		left, _, err := c.releaseOnce(rctx, h, k, hs)
		switch {
		case errors.Is(err, ErrNotHeld): // gone already (expired, taken)
			return nil
		case err != nil:
			c.loseHold(k, hs)
			return err
		case left == 0:
			return nil
		}
	}
	return nil
}

// lateError is the ErrLockLost of an acquisition, re-entry or Extend that
// Redis confirmed past the hold's local deadline (what says the reply came
// late), with how dropLate's give-back went (gave: its error, nil when
// every hold was given back).
func lateError(what string, took time.Duration, gave error) error {
	err := fmt.Errorf("%w: %s was confirmed %v after it was sent, past the hold's local deadline (its lease less the clock allowance): the hold counts as lost, and the owner's holds on the lock were given back",
		ErrLockLost, what, took.Round(time.Millisecond))
	if gave != nil {
		err = fmt.Errorf("%w (but giving it back failed: %w)", err, gave)
	}
	return err
}

// released records what a release left: count holds (0: none). It
// returns how long the owner held the lock when that was its last hold.
func (c *Client) released(k holdKey, h *hold, count int) (held time.Duration) {
	ended, kd := false, kind(0)
	c.holds.update(k, func() {
		h.count = max(count, 0)
		if h.count == 0 {
			if h.entry != nil {
				kd = h.kind
				h.entry.Stop()
				// Stopped before the watchdog lost it (a lost entry has its
				// Err, and its "lost" event): this release ends the hold.
				ended = h.entry.Err() == nil
				h.entry = nil
				held = time.Since(h.since)
			}
			h.renewed = false
		}
	})
	if ended {
		c.observeHold("free", k, kd, held)
	}
	return held
}

// loseHold records that Redis no longer has the owner's hold (an
// acquisition, a release or a read found fewer holds than the ledger
// counted): the hold is lost, its LostContext ends with ErrLockLost at
// once, and the ledger counts none.
func (c *Client) loseHold(k holdKey, h *hold) {
	var e *watchdog.Entry
	c.holds.update(k, func() {
		e, h.entry = h.entry, nil
		h.count, h.renewed = 0, false
	})
	if e == nil {
		return
	}
	if e.IsLost() {
		return // known already
	}
	c.logger().Warn("goredisson: lock lost: Redis no longer has this owner's hold", "lock", k.name, "field", k.field)
	e.Lose()
}

// leaseData is what the watchdog keeps of a lease for the Client: how to
// renew it and which kind of lock it is (for events).
type leaseData struct {
	renew renewKind
	kind  kind
	key   string // the lock's Redis key (a faster multilock's group)
	// keys are a kept permit's permits.lua keys (nil for other kinds).
	keys []any
	// values are a faster multilock's value fields (nil for other kinds).
	values []any
}

// lost reports a lease the watchdog found lost (the WithOnLost callback).
func (c *Client) lost(l watchdog.Lease, err error) {
	if c.opts.observer == nil {
		return
	}
	k := holdKey{l.Key, l.Field}
	var held time.Duration
	if since := c.holds.since(k); !since.IsZero() {
		held = time.Since(since)
	}
	var cause error = ErrLockLost
	if err == watchdog.ErrClosed {
		cause = ErrClosed
	}
	k2 := l.Data.(leaseData).kind.String()
	if l.Data.(leaseData).renew == renewPermit {
		k2 = "permitsemaphore"
		if cause == ErrLockLost {
			cause = &permitLostError{id: l.Field}
		}
	}
	c.observe(context.Background(), Event{Op: "lost", Kind: k2, Lock: l.Data.(leaseData).key,
		Start: time.Now(), Held: held, Err: cause})
}

// releaseLease is the lease the key keeps at least while holds remain
// after a release: the watchdog timeout for a watchdog-managed hold, 0
// (the key's expiry as it is: it covers every fixed hold taken) for fixed
// ones. Redisson re-applies the last lease given instead
// (internalLockLeaseTime), which can cut an outer hold's lease short.
func (c *Client) releaseLease(h *hold) time.Duration {
	if h.renewed {
		return c.opts.watchdogTimeout
	}
	return 0
}

// lookAt enters the owner's hold k for a look at it in Redis (HoldCount,
// IsHeldByCurrent, IsHeldByOwner) and runs the kept settles of its lost or
// failed calls first: a hold that a lost acquire took in Redis after its
// caller was told it failed is given back before anything is read, and an
// answer is given only once it is true (a settle that cannot reach Redis
// is the look's error). The caller calls exit.
func (c *Client) lookAt(ctx context.Context, k holdKey) (*hold, error) {
	hs, err := c.holds.enter(ctx, k, c.done)
	if err != nil {
		return nil, err
	}
	if err := c.runUnsettled(ctx, k, hs); err != nil {
		c.holds.exit(k, hs)
		return nil, err
	}
	return hs, nil
}

// runUnsettled runs the kept settles of the owner's lost or failed calls on the lock,
// in order, and fails (keeping the rest) when one still cannot reach Redis:
// until they are done, a new call could count a hold twice, and a look
// could report a hold the owner was told it did not get. Each is sent
// again while its clean-up bound lasts (ctx's deadline, at most
// cleanupTimeout: see sendAgain). The caller has entered the hold.
func (c *Client) runUnsettled(ctx context.Context, k holdKey, h *hold) error {
	for len(h.unsettled) > 0 {
		if err := h.unsettled[0](ctx); err != nil {
			return fmt.Errorf("settling an earlier call of this owner on the lock (a release that failed, or a call whose reply was lost): %w", err)
		}
		c.holds.update(k, func() { h.unsettled = h.unsettled[1:] })
	}
	return nil
}
