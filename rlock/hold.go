package rlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/goredisson/goredisson/ctxowner"
)

// Hold is one acquisition of a lock by an owner, as a handle: what a Java
// LockHandle wrapper around tryLock/unlock ports to.
//
//	h, err := rlock.Acquire(ctx, lock, wait, lease)
//	if err != nil {
//		return err // errors.Is(err, rlock.ErrBusy): not acquired within wait
//	}
//	defer h.Close()
//	return work(h.Context()) // ends if the lock is lost
//
// The hold belongs to the owner of the context given to Acquire, pinned
// (ctxowner.Pin), so Release works from any goroutine, as Redisson's
// unlockAsync(threadId) does. Release and Close give the hold back once:
// later calls do nothing and return what the first returned. Its methods
// never panic, on a nil *Hold neither.
type Hold struct {
	l     Locker
	owner context.Context // the acquisition's context, owner pinned
	token int64
	lost  context.Context
	stop  context.CancelFunc

	once sync.Once
	err  error // the release's result, once done
}

// Acquire takes l for ctx's owner within wait (TryLock: wait <= 0 is one
// attempt; lease <= 0 the watchdog) and returns the hold, or an error
// wrapping ErrBusy when the wait ran out. A FencedLock's hold carries its
// token.
func Acquire(ctx context.Context, l Locker, wait, lease time.Duration) (*Hold, error) {
	return acquireHold(ctx, "acquire", l, func(ctx context.Context) (int64, bool, error) {
		if f, ok := l.(*FencedLock); ok {
			return f.TryLockToken(ctx, wait, lease)
		}
		ok, err := l.TryLock(ctx, wait, lease)
		return 0, ok, err
	})
}

// AcquireWait is Acquire that waits until l is held (LockLease); only ctx
// bounds it.
func AcquireWait(ctx context.Context, l Locker, lease time.Duration) (*Hold, error) {
	return acquireHold(ctx, "acquirewait", l, func(ctx context.Context) (int64, bool, error) {
		if f, ok := l.(*FencedLock); ok {
			t, err := f.LockTokenLease(ctx, lease)
			return t, err == nil, err
		}
		return 0, true, l.LockLease(ctx, lease)
	})
}

func acquireHold(ctx context.Context, op string, l Locker, take func(context.Context) (int64, bool, error)) (*Hold, error) {
	switch {
	case ctx == nil:
		return nil, opErr(op, nameOf(l), fmt.Errorf("%w: nil context", ErrInvalidArgument))
	case l == nil:
		return nil, opErr(op, "", fmt.Errorf("%w: nil lock", ErrInvalidArgument))
	}
	owner := ctxowner.Pin(ctx)
	token, ok, err := take(owner)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, opErr(op, l.Name(), ErrBusy)
	}
	h := &Hold{l: l, owner: owner, token: token}
	// The hold outlives the acquisition's context (a request's, say): its
	// own context ends on a loss or at Release.
	base := context.WithoutCancel(owner)
	if _, watched := l.(lossWatcher); watched {
		h.lost, h.stop = LostContext(base, l)
	} else {
		h.lost, h.stop = context.WithCancel(base)
	}
	return h, nil
}

// Locker returns the lock held.
func (h *Hold) Locker() Locker {
	if h == nil {
		return nil
	}
	return h.l
}

// Token returns a FencedLock hold's fencing token (0 for other locks).
func (h *Hold) Token() int64 {
	if h == nil {
		return 0
	}
	return h.token
}

// Context returns a context that ends when the hold is lost (cause
// ErrLockLost, as LostContext's) or released (context.Canceled). It
// carries the acquisition's values and owner, not its cancellation.
func (h *Hold) Context() context.Context {
	if h == nil {
		return nilHoldContext()
	}
	return h.lost
}

// Lost reports whether the hold was lost before it was released.
func (h *Hold) Lost() bool {
	return h != nil && errors.Is(context.Cause(h.lost), ErrLockLost)
}

// Held asks Redis whether the owner still holds the lock (false after
// Release).
func (h *Hold) Held(ctx context.Context) (bool, error) {
	if h == nil {
		return false, opErr("held", "", fmt.Errorf("%w: nil hold", ErrInvalidArgument))
	}
	if ctx == nil {
		return false, opErr("held", h.l.Name(), fmt.Errorf("%w: nil context", ErrInvalidArgument))
	}
	return h.l.IsHeldByCurrent(withOwner(ctx, h.owner))
}

// Release gives the hold back (Unlock as its owner, from any goroutine) and
// ends its Context. It runs once: later calls return the first call's
// result. nil: released; ErrNotHeld: the hold was gone (lost, or force
// unlocked); ErrClosed: the Client was closed; ErrUnknownOutcome: the
// reply was lost (it is not sent again). As Unlock, an ended ctx does not
// stop it.
func (h *Hold) Release(ctx context.Context) error {
	if h == nil {
		return opErr("release", "", fmt.Errorf("%w: nil hold", ErrInvalidArgument))
	}
	if ctx == nil {
		ctx = context.Background()
	}
	h.once.Do(func() {
		h.err = h.l.Unlock(withOwner(ctx, h.owner))
		h.stop()
	})
	return h.err
}

// Close is Release with a background context, for defer and io.Closer.
func (h *Hold) Close() error { return h.Release(context.Background()) }

// PermitHold is one permit of a PermitExpirableSemaphore, as a handle:
// what a Java PermitHandle wrapper around acquire/release(permitId) ports
// to. Its methods never panic, on a nil *PermitHold neither.
type PermitHold struct {
	s    *PermitExpirableSemaphore
	id   string
	lost context.Context
	stop context.CancelFunc

	once sync.Once
	err  error
}

// AcquirePermit takes a permit of s with lease within wait (TryAcquire:
// wait <= 0 is one attempt; lease <= 0 a permit that never expires) and
// returns its hold, or an error wrapping ErrBusy when the wait ran out.
func AcquirePermit(ctx context.Context, s *PermitExpirableSemaphore, wait, lease time.Duration) (*PermitHold, error) {
	return acquirePermit(ctx, "acquirepermit", s, lease, func() (string, bool, error) { return s.TryAcquire(ctx, wait, lease) })
}

// AcquirePermitWait is AcquirePermit that waits until a permit is free;
// only ctx bounds it.
func AcquirePermitWait(ctx context.Context, s *PermitExpirableSemaphore, lease time.Duration) (*PermitHold, error) {
	return acquirePermit(ctx, "acquirepermitwait", s, lease, func() (string, bool, error) {
		id, err := s.Acquire(ctx, lease)
		return id, err == nil, err
	})
}

func acquirePermit(ctx context.Context, op string, s *PermitExpirableSemaphore, lease time.Duration, take func() (string, bool, error)) (*PermitHold, error) {
	switch {
	case s == nil:
		return nil, opErr(op, "", fmt.Errorf("%w: nil semaphore", ErrInvalidArgument))
	case ctx == nil:
		return nil, opErr(op, s.Name(), fmt.Errorf("%w: nil context", ErrInvalidArgument))
	}
	sent := time.Now() // no later than Redis computes the permit's expiry
	id, ok, err := take()
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, opErr(op, s.Name(), ErrBusy)
	}
	p := &PermitHold{s: s, id: id}
	base := context.WithoutCancel(ctx)
	if lease > 0 {
		// The permit expires at its lease's end unless UpdateLeaseTime moves it.
		var cancel context.CancelFunc
		p.lost, cancel = context.WithDeadlineCause(base, sent.Add(lease), opErr("lost", s.Name(), fmt.Errorf("%w: the permit's lease ran out", ErrLockLost)))
		p.stop = cancel
	} else {
		p.lost, p.stop = context.WithCancel(base)
	}
	return p, nil
}

// ID returns the permit's id.
func (p *PermitHold) ID() string {
	if p == nil {
		return ""
	}
	return p.id
}

// Semaphore returns the permit's semaphore.
func (p *PermitHold) Semaphore() *PermitExpirableSemaphore {
	if p == nil {
		return nil
	}
	return p.s
}

// Context returns a context that ends when the permit's lease runs out, as
// measured from before its acquisition (cause ErrLockLost), or at Release
// (context.Canceled).
func (p *PermitHold) Context() context.Context {
	if p == nil {
		return nilHoldContext()
	}
	return p.lost
}

// Lost reports whether the permit's lease ran out before Release.
func (p *PermitHold) Lost() bool {
	return p != nil && errors.Is(context.Cause(p.lost), ErrLockLost)
}

// Held asks Redis whether the permit is still held (LeaseTime finds it).
func (p *PermitHold) Held(ctx context.Context) (bool, error) {
	if p == nil {
		return false, opErr("held", "", fmt.Errorf("%w: nil hold", ErrInvalidArgument))
	}
	_, err := p.s.LeaseTime(ctx, p.id)
	if errors.Is(err, ErrNotHeld) {
		return false, nil
	}
	return err == nil, err
}

// Release gives the permit back by id and ends the Context, once: later
// calls return the first call's result (nil, ErrNotHeld when the permit was
// gone, ErrClosed, ...). As the semaphore's Release, an ended ctx does not
// stop it.
func (p *PermitHold) Release(ctx context.Context) error {
	if p == nil {
		return opErr("release", "", fmt.Errorf("%w: nil hold", ErrInvalidArgument))
	}
	if ctx == nil {
		ctx = context.Background()
	}
	p.once.Do(func() {
		p.err = p.s.Release(ctx, p.id)
		p.stop()
	})
	return p.err
}

// Close is Release with a background context.
func (p *PermitHold) Close() error { return p.Release(context.Background()) }

// nilHoldContext is a nil hold's Context: ended, its cause
// ErrInvalidArgument.
func nilHoldContext() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(opErr("hold", "", fmt.Errorf("%w: nil hold", ErrInvalidArgument)))
	return ctx
}

// ownerCtx is a context whose values come from an acquisition's context
// first (its pinned owner), and whose deadline and cancellation are the
// caller's.
type ownerCtx struct {
	context.Context
	vals context.Context
}

func (c ownerCtx) Value(key any) any {
	if v := c.vals.Value(key); v != nil {
		return v
	}
	return c.Context.Value(key)
}

func withOwner(ctx, owner context.Context) context.Context {
	return ownerCtx{Context: ctx, vals: owner}
}
