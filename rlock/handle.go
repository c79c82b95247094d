package rlock

import (
	"context"
	"time"
)

// The operations every lock kind shares, on its handle; each lock type's
// exported methods call these.

// NoExpiry is what RemainTTL returns for a key without expiry (Redisson's -1).
const NoExpiry time.Duration = -1

func (h *handle) lockName() string {
	if h == nil {
		return ""
	}
	return h.logical()
}

// tryLock is TryLock: wait <= 0 makes one attempt, as Redisson's
// tryLock(-1, lease) does.
func (h *handle) tryLock(ctx context.Context, wait, lease time.Duration) (bool, error) {
	_, held, err := h.acquire(ctx, "trylock", max(wait, 0), lease)
	return held, err
}

// lock is Lock and LockLease: it waits until held or ctx ends.
func (h *handle) lock(ctx context.Context, lease time.Duration) error {
	_, _, err := h.acquire(ctx, "lock", forever, lease)
	return err
}

func (h *handle) forceUnlockOp(ctx context.Context) (bool, error) {
	start := time.Now()
	err := h.check(ctx, "forceunlock")
	var ok bool
	if err == nil {
		ok, err = h.forceUnlock(ctx)
		err = opErr(h.opName("forceunlock"), h.name, err)
	}
	h.observe(ctx, Event{Op: "forceunlock", Start: start, Err: err})
	return ok, err
}

func (h *handle) isLockedOp(ctx context.Context) (bool, error) {
	if err := h.check(ctx, "islocked"); err != nil {
		return false, err
	}
	ok, err := h.isLocked(ctx)
	return ok, opErr(h.opName("islocked"), h.name, err)
}

// holdCount returns how many holds ctx's owner has, read from Redis once no
// call of that owner on the lock is in flight (or being settled) and its
// kept settles ran (see Client.lookAt).
func (h *handle) holdCount(ctx context.Context, op string) (int, error) {
	if err := h.check(ctx, op); err != nil {
		return 0, err
	}
	c := h.c
	k := h.holdKey(h.field(ctx))
	hs, err := c.lookAt(ctx, k)
	if err != nil {
		return 0, opErr(h.opName(op), h.name, err)
	}
	defer c.holds.exit(k, hs)
	n, err := h.holds(ctx, k.field)
	if err == nil && int(n) < hs.known() {
		c.loseHold(k, hs) // Redis has fewer holds than this Client took: they are gone
		c.released(k, hs, int(n))
	}
	return int(n), opErr(h.opName(op), h.name, err)
}

func (h *handle) isHeldByCurrent(ctx context.Context) (bool, error) {
	n, err := h.holdCount(ctx, "isheldbycurrent")
	return n > 0, err
}

// remainTTL returns the lock key's PTTL: 0 when there is no lock, NoExpiry
// when the key has no expiry.
func (h *handle) remainTTL(ctx context.Context) (time.Duration, error) {
	if err := h.check(ctx, "remainttl"); err != nil {
		return 0, err
	}
	ms, err := h.pttl(ctx)
	switch {
	case err != nil:
		return 0, opErr(h.opName("remainttl"), h.name, err)
	case ms == -2:
		return 0, nil
	case ms == -1:
		return NoExpiry, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}
