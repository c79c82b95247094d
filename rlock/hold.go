package rlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/goredisson/goredisson/ctxowner"
)

// Hold is one acquisition of a lock, as a handle (a Java LockHandle).
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

// Acquire takes l within wait (TryLock) and returns its hold, else ErrBusy.
func Acquire(ctx context.Context, l Locker, wait, lease time.Duration) (*Hold, error) {
	return acquireHold(ctx, "acquire", l, func(ctx context.Context) (int64, bool, error) {
		if f, ok := l.(*FencedLock); ok {
			return f.TryLockToken(ctx, wait, lease)
		}
		ok, err := l.TryLock(ctx, wait, lease)
		return 0, ok, err
	})
}

// AcquireWait is Acquire that waits until ctx ends (LockLease).
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

// Context returns the hold's loss signal (LostContext), ended at Release.
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

// Held asks Redis whether the owner still holds the lock.
func (h *Hold) Held(ctx context.Context) (bool, error) {
	if h == nil {
		return false, errNilHold("held")
	}
	if ctx == nil {
		return false, opErr("held", h.l.Name(), fmt.Errorf("%w: nil context", ErrInvalidArgument))
	}
	return h.l.IsHeldByCurrent(withOwner(ctx, h.owner))
}

// Release unlocks as the hold's owner and ends its Context, once.
func (h *Hold) Release(ctx context.Context) error {
	if h == nil {
		return errNilHold("release")
	}
	return h.rel.do(ctx, h.lost, func(ctx context.Context) error { return h.l.Unlock(withOwner(ctx, h.owner)) }, h.stop)
}

// Close is Release with a background context, for defer and io.Closer.
func (h *Hold) Close() error { return h.Release(context.Background()) }

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
