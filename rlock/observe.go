package rlock

import (
	"context"
	"time"
)

// Observer receives what a Client's locks do, for metrics, traces and
// logs (see WithObserver; the module github.com/goredisson/goredisson/rlockotel
// adapts it to OpenTelemetry). Observe is called synchronously on the
// goroutine that made the call (for a loss, on the watchdog's), after the
// operation ended: it must be fast, must not block, and must not call back
// into the Client.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// Event is one operation of a lock, or the loss of a hold.
type Event struct {
	// Op is what happened: an acquisition ("lock", "trylock", and a
	// FencedLock's "locktoken", "trylocktoken"; "acquire" and
	// "tryacquire" of a semaphore), a release ("unlock"; a semaphore's
	// "release"), "forceunlock", a latch's "await", or "lost": a hold was
	// lost (its lease ran out without a confirmed renewal, it was
	// force-unlocked or taken, or the Client closed while it was held).
	Op string
	// Kind is the lock type: "lock", "nonreentrantlock", "fairlock",
	// "spinlock", "fencedlock", "readlock", "writelock", "semaphore",
	// "permitsemaphore", "countdownlatch".
	Kind string
	// Lock is the lock's name. It is unbounded user input: keep it out of
	// metric attributes.
	Lock string
	// Start is when the operation began; Duration how long it took (for an
	// acquisition: the wait).
	Start    time.Time
	Duration time.Duration
	// Attempts counts the attempts an acquisition sent to Redis; Contended
	// those that found the lock (or the permits) taken.
	Attempts  int
	Contended int
	// Acquired reports that an acquisition took a hold.
	Acquired bool
	// Held is how long the owner held the lock (from the send of its first
	// hold's acquisition), set when its last hold was given back or lost.
	// An unlock after a loss (ErrNotHeld) reports the time to that unlock.
	Held time.Duration
	// Err is the operation's error (nil on success; nil too for a TryLock
	// whose wait ran out), invalid arguments and a closed Client included.
	// For "lost" it is ErrLockLost or ErrClosed. An error reply of Redis
	// satisfies go-redis's redis.Error (errors.As).
	Err error
}

// WithObserver makes the Client report every lock operation to o (default:
// none). A nil o is ErrInvalidArgument.
func WithObserver(o Observer) Option {
	return func(opts *options) {
		if o == nil {
			opts.errs = append(opts.errs, errNilObserver)
			return
		}
		opts.observer = o
	}
}

// observe reports an event when the Client has an Observer.
func (c *Client) observe(ctx context.Context, e Event) {
	if c.opts.observer != nil {
		c.opts.observer.Observe(ctx, e)
	}
}

// observe reports an event of this lock (Kind, Lock and Duration filled in
// here) when its Client has an Observer.
func (h *handle) observe(ctx context.Context, e Event) {
	if h == nil || h.c == nil || h.c.opts.observer == nil {
		return
	}
	e.Kind, e.Lock, e.Duration = h.kind.String(), h.name, time.Since(e.Start)
	h.c.opts.observer.Observe(ctx, e)
}
