package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/goredisson/goredisson/internal/engine"
	"github.com/goredisson/goredisson/internal/layout"
)

// handle is what every single-key lock holds: the engine's handle of the
// lock (engine.Handle: the Client, the name, the kind, the keys), with the
// checks, errors and events of the calls on it. Each lock type's exported
// methods call these.
type handle struct{ engine.Handle }

// NoExpiry is what RemainTTL returns for a key without expiry (Redisson's -1).
const NoExpiry time.Duration = -1

// forever is the wait of Lock and LockLease: until held or ctx ends.
const forever time.Duration = -1

// newHandle returns the handle of the lock of kind k named name on c.
func newHandle(c *Client, name string, k engine.Kind) handle {
	return handle{engine.NewHandle(c.core(), name, k)}
}

// check validates a handle for an operation.
func (h *handle) check(ctx context.Context, op string) error {
	switch {
	case h == nil || h.Core() == nil:
		return opErr(op, h.nameOrEmpty(), fmt.Errorf("%w: nil client", ErrInvalidArgument))
	case h.Key() == "":
		return opErr(h.OpName(op), "", fmt.Errorf("%w: empty lock name", ErrInvalidArgument))
	case ctx == nil:
		return opErr(h.OpName(op), h.Key(), fmt.Errorf("%w: nil context", ErrInvalidArgument))
	case h.KindErr() != nil:
		return opErr(h.OpName(op), h.Key(), h.KindErr())
	case h.NameErr() != nil:
		return opErr(h.OpName(op), h.Logical(), h.NameErr())
	case h.Core().Cluster() && !layout.SlotSafe(h.Key()):
		return opErr(h.OpName(op), h.Key(), fmt.Errorf("%w: on Redis Cluster a lock name with a stray '{' or '}' puts its auxiliary keys in other slots; use a hash tag such as {order:42}", ErrInvalidArgument))
	case h.Core().Closed():
		return opErr(h.OpName(op), h.Key(), ErrClosed)
	}
	return nil
}

func (h *handle) nameOrEmpty() string {
	if h == nil {
		return ""
	}
	return h.Key()
}

// observe reports an event of this lock (Kind, Lock and Duration filled in
// here) when its Client has an Observer.
func (h *handle) observe(ctx context.Context, e engine.Event) {
	if h == nil || !h.Core().Observed() {
		return
	}
	e.Kind, e.Lock, e.Duration = h.Kind().String(), h.Key(), time.Since(e.Start)
	h.Core().Observe(ctx, e)
}

func (h *handle) lockName() string {
	if h == nil {
		return ""
	}
	return h.Logical()
}

// waitMillis is a wait as Redisson's TimeUnit (and Duration) conversion
// makes it: whole milliseconds, so that a wait in (0, 1ms), a computed
// deadline's remainder say, is 0: one attempt. A negative wait stays.
func waitMillis(wait time.Duration) time.Duration {
	if wait > 0 {
		return wait.Truncate(time.Millisecond)
	}
	return wait
}

// acquire is the one acquisition of every lock kind: it takes a hold for
// ctx's owner within wait (0: one attempt; forever: until ctx ends) with
// the given lease (<= 0: watchdog) and returns the fencing token of a
// FencedLock. It returns (0, false, nil) when the wait ran out.
func (h *handle) acquire(ctx context.Context, op string, wait, lease time.Duration) (token int64, held bool, err error) {
	// What comes before and after the wait is done in beginAcquire and
	// endAcquire, off this frame, which stays on a parked waiter's stack:
	// the smaller the parked stack, the smaller the runtime shrinks it
	// (see docs/benchmarks.md, memory per waiter).
	start := time.Now()
	if err := h.beginAcquire(ctx, op, start, lease); err != nil {
		return 0, false, err
	}
	a, err := h.Acquire(ctx, waitMillis(wait), lease)
	return h.endAcquire(ctx, op, start, a, err)
}

// beginAcquire reports an acquisition's start and checks its arguments;
// a refusal is reported too.
//
//go:noinline
func (h *handle) beginAcquire(ctx context.Context, op string, start time.Time, lease time.Duration) error {
	h.observeAcquire(ctx, "wait", start, engine.Acquired{}, nil)
	if err := h.checkAcquire(ctx, op, lease); err != nil {
		h.observeAcquire(ctx, op, start, engine.Acquired{}, err)
		return err
	}
	return nil
}

// endAcquire wraps an acquisition's error and reports what it did.
//
//go:noinline
func (h *handle) endAcquire(ctx context.Context, op string, start time.Time, a engine.Acquired, err error) (int64, bool, error) {
	err = opErr(h.OpName(op), h.Key(), err)
	h.observeAcquire(ctx, op, start, a, err)
	return a.Token, a.Held, err
}

// observeAcquire reports an acquisition's event op (a: what it did). It is
// not inlined, so that the Event is built off acquire's frame.
//
//go:noinline
func (h *handle) observeAcquire(ctx context.Context, op string, start time.Time, a engine.Acquired, err error) {
	h.observe(ctx, engine.Event{Op: op, Start: start, Acquired: a.Held, Attempts: a.Attempts, Contended: a.Contended, Err: err})
}

// checkAcquire validates an acquisition's handle and lease (a wait is
// truncated to whole milliseconds instead: waitMillis).
func (h *handle) checkAcquire(ctx context.Context, op string, lease time.Duration) error {
	if err := h.check(ctx, op); err != nil {
		return err
	}
	switch {
	case lease > 0 && lease < time.Millisecond:
		return opErr(h.OpName(op), h.Key(), fmt.Errorf("%w: lease %v is below Redis's 1ms resolution (use <= 0 for a watchdog lease)", ErrInvalidArgument, lease))
	}
	return nil
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

// unlock gives back one hold of ctx's owner (see engine.Handle.Unlock): it
// is cleanup, an ended ctx does not stop it.
func (h *handle) unlock(ctx context.Context) error {
	start := time.Now()
	if err := h.check(ctx, "unlock"); err != nil {
		h.observe(ctx, engine.Event{Op: "unlock", Start: start, Err: err})
		return err
	}
	held, err := h.Unlock(ctx)
	err = opErr(h.OpName("unlock"), h.Key(), err)
	h.observe(ctx, engine.Event{Op: "unlock", Start: start, Held: held, Err: err})
	return err
}

func (h *handle) forceUnlockOp(ctx context.Context) (bool, error) {
	start := time.Now()
	err := h.check(ctx, "forceunlock")
	var ok bool
	if err == nil {
		ok, err = h.ForceUnlock(ctx)
		err = opErr(h.OpName("forceunlock"), h.Key(), err)
	}
	h.observe(ctx, engine.Event{Op: "forceunlock", Start: start, Err: err})
	return ok, err
}

func (h *handle) isLockedOp(ctx context.Context) (bool, error) {
	if err := h.check(ctx, "islocked"); err != nil {
		return false, err
	}
	ok, err := h.IsLocked(ctx)
	return ok, opErr(h.OpName("islocked"), h.Key(), err)
}

// holdCount returns how many holds ctx's owner has, read from Redis once no
// call of that owner on the lock is in flight (or being settled) and its
// kept settles ran (see engine.Handle.HoldCount).
func (h *handle) holdCount(ctx context.Context, op string) (int, error) {
	if err := h.check(ctx, op); err != nil {
		return 0, err
	}
	n, err := h.HoldCount(ctx)
	return n, opErr(h.OpName(op), h.Key(), err)
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
	ms, err := h.PTTL(ctx)
	switch {
	case err != nil:
		return 0, opErr(h.OpName("remainttl"), h.Key(), err)
	case ms == -2:
		return 0, nil
	case ms == -1:
		return NoExpiry, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}
