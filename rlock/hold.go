package rlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/watchdog"
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
	rel   releaseOnce
}

// releaseOnce is a hold's release, run once: later calls return the first
// call's result.
type releaseOnce struct {
	once sync.Once
	err  error
}

// do runs give with ctx (context.Background when nil) once, then end; it
// returns give's result, the first call's for every call. Before give it
// looks at lost (the hold's context), so that a hold whose local deadline
// passed before its release says so (Lost) rather than "released".
func (r *releaseOnce) do(ctx context.Context, lost context.Context, give func(context.Context) error, end func()) error {
	if ctx == nil {
		ctx = context.Background()
	}
	r.once.Do(func() {
		_ = lost.Err()
		r.err = give(ctx)
		end()
	})
	return r.err
}

// errNilHold is the ErrInvalidArgument of a method of a nil hold that
// returns an error.
func errNilHold(op string) error {
	return opErr(op, "", fmt.Errorf("%w: nil hold", ErrInvalidArgument))
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
		return false, errNilHold("held")
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
		return errNilHold("release")
	}
	return h.rel.do(ctx, h.lost, func(ctx context.Context) error { return h.l.Unlock(withOwner(ctx, h.owner)) }, h.stop)
}

// Close is Release with a background context, for defer and io.Closer.
func (h *Hold) Close() error { return h.Release(context.Background()) }

// PermitHold is one permit of a PermitExpirableSemaphore, as a handle:
// what a Java PermitHandle wrapper around acquire/release(permitId) ports
// to. Its methods never panic, on a nil *PermitHold neither.
type PermitHold struct {
	s  *PermitExpirableSemaphore
	id string
	// entry watches the permit's lease (a fixed lease, never renewed): its
	// local deadline, from the send of the acquire that took the permit,
	// less watchdog.Allowance, moved by UpdateLeaseTime.
	entry *watchdog.Entry
	lost  context.Context
	stop  context.CancelFunc
	mu    sync.Mutex // one UpdateLeaseTime at a time: the deadline follows Redis's order
	rel   releaseOnce
}

// noExpiry is how far ahead the local deadline of a permit that never
// expires lies: it ends only at Release, a loss or the Client's Close.
const noExpiry = 100 * 365 * 24 * time.Hour

// permitDeadline is the local deadline of a permit lease sent at sent.
func permitDeadline(sent time.Time, lease time.Duration) time.Time {
	if lease <= 0 {
		return sent.Add(noExpiry)
	}
	return watchdog.Deadline(sent, lease)
}

// AcquirePermit takes a permit of s with lease within wait (TryAcquire:
// wait <= 0 is one attempt; lease <= 0 a permit that never expires) and
// returns its hold, or an error wrapping ErrBusy when the wait ran out.
func AcquirePermit(ctx context.Context, s *PermitExpirableSemaphore, wait, lease time.Duration) (*PermitHold, error) {
	return acquirePermit(ctx, "acquirepermit", "tryacquire", s, max(wait, 0), lease)
}

// AcquirePermitWait is AcquirePermit that waits until a permit is free;
// only ctx bounds it.
func AcquirePermitWait(ctx context.Context, s *PermitExpirableSemaphore, lease time.Duration) (*PermitHold, error) {
	return acquirePermit(ctx, "acquirepermitwait", "acquire", s, -1, lease)
}

// acquirePermit takes the permit as the semaphore's acquire op (wait < 0:
// until ctx ends) and watches its lease from the send of the attempt that
// took it.
func acquirePermit(ctx context.Context, op, acquireOp string, s *PermitExpirableSemaphore, wait, lease time.Duration) (*PermitHold, error) {
	switch {
	case s == nil:
		return nil, opErr(op, "", fmt.Errorf("%w: nil semaphore", ErrInvalidArgument))
	case ctx == nil:
		return nil, opErr(op, s.Name(), fmt.Errorf("%w: nil context", ErrInvalidArgument))
	}
	ids, sent, ok, err := s.acquire(ctx, acquireOp, 1, wait, lease)
	switch {
	case err != nil:
		return nil, err
	case !ok || len(ids) != 1:
		return nil, opErr(op, s.Name(), ErrBusy)
	}
	h := s.handle()
	name, id := h.name, ids[0]
	p := &PermitHold{s: s, id: id}
	p.entry = h.c.wd.Add(watchdog.Lease{Key: name, Field: id, Permit: true,
		Data: leaseData{renew: renewPermit, key: name}}, permitDeadline(sent, lease), false)
	p.lost, p.stop = newLossCtx(context.WithoutCancel(ctx), &lossWatch{entry: p.entry}, permitLossCause(name, id), nil)
	return p, nil
}

// permitLossCause is the cause of a permit's loss signal: permitLostError
// ("permit <id> lost ..."), or ErrClosed naming the permit.
func permitLossCause(semaphore, id string) func(error) error {
	return func(why error) error {
		if why == ErrLockLost {
			return opErr("lost", semaphore, &permitLostError{id: id})
		}
		return opErr("lost", semaphore, fmt.Errorf("%w: permit %s", why, id))
	}
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

// Context returns a context that ends when the permit's lease runs out
// (its cause wraps ErrLockLost: "permit <id> lost ..."), when the Client
// closes (ErrClosed), or at Release (context.Canceled). It carries the
// acquisition's values, not its cancellation. The lease is counted from
// the send of the attempt that took the permit, less watchdog.Allowance
// (1 % + 2 ms, for clock rates), and follows the hold's UpdateLeaseTime;
// as LostContext, the context is live only while that local deadline has
// not passed: every look at its Err, Done or Value after it sees the end,
// whatever ran first after a pause. The semaphore's UpdateLeaseTime of the
// permit's id, or any change made elsewhere, is not followed: change the
// lease through the hold.
func (p *PermitHold) Context() context.Context {
	if p == nil {
		return nilHoldContext()
	}
	return p.lost
}

// Lost reports whether the permit was lost (its lease ran out) before
// Release.
func (p *PermitHold) Lost() bool {
	return p != nil && errors.Is(context.Cause(p.lost), ErrLockLost)
}

// Held asks Redis whether the permit is still held (LeaseTime finds it).
func (p *PermitHold) Held(ctx context.Context) (bool, error) {
	if p == nil {
		return false, errNilHold("held")
	}
	_, err := p.s.LeaseTime(ctx, p.id)
	if errors.Is(err, ErrNotHeld) {
		return false, nil
	}
	return err == nil, err
}

// UpdateLeaseTime sets the permit's lease to lease from now (the
// semaphore's UpdateLeaseTime of its id; lease <= 0: it never expires)
// and moves the Context's deadline with it, shorter or longer. false when
// Redis no longer has the permit: the hold is lost (its Context ends). A
// call that failed may still have run: until a later one succeeds, the
// Context keeps the earlier of the two deadlines. A Context that has ended
// stays ended (a lost hold is final), even if Redis still had the permit
// and took the new lease.
func (p *PermitHold) UpdateLeaseTime(ctx context.Context, lease time.Duration) (bool, error) {
	if p == nil {
		return false, errNilHold("updateleasetime")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	sent := time.Now()
	ok, err := p.s.UpdateLeaseTime(ctx, p.id, lease)
	next := permitDeadline(sent, lease)
	switch {
	case err == nil && ok:
		p.entry.Reset(next)
	case err == nil:
		p.entry.Lose()
	case errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrClosed):
		// not sent
	case next.Before(p.entry.Deadline()):
		p.entry.Reset(next) // it may have run
	}
	return ok, err
}

// Release gives the permit back by id and ends the Context, once: later
// calls return the first call's result (nil, ErrNotHeld when the permit was
// gone, ErrClosed, ...). As the semaphore's Release, an ended ctx does not
// stop it.
func (p *PermitHold) Release(ctx context.Context) error {
	if p == nil {
		return errNilHold("release")
	}
	return p.rel.do(ctx, p.lost, func(ctx context.Context) error { return p.s.Release(ctx, p.id) }, func() {
		p.stop()
		p.entry.Stop()
	})
}

// Close is Release with a background context.
func (p *PermitHold) Close() error { return p.Release(context.Background()) }

// nilHoldContext is a nil hold's Context: ended, its cause
// ErrInvalidArgument.
func nilHoldContext() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errNilHold("hold"))
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
