package rlock

import (
	"context"
	"time"
)

// Observer receives a Client's lock events (WithObserver). Observe must be
// fast, must not block, and must not call back into the Client.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// Event is one operation of a lock, or the loss of a hold.
type Event struct {
	// Op: "lock", "trylock", "locktoken", "trylocktoken", "acquire",
	// "tryacquire", "unlock", "release", "forceunlock", "await", "extend",
	// "lost", or a gauge mark: "wait", "hold", "free" (docs/observability.md).
	Op        string
	Kind      string        // the lock type: "lock", "fairlock", "semaphore", ...
	Lock      string        // the lock's name (unbounded: normalise it for metrics)
	Start     time.Time     // when the operation began
	Duration  time.Duration // how long it took
	Attempts  int           // an acquisition's attempts
	Contended int           // the attempts that found it taken
	Acquired  bool          // the acquisition took a hold
	Held      time.Duration // on a last hold's end: how long it was held
	Err       error         // nil for a TryLock that ran out; "lost": ErrLockLost (a kept permit's: an error that Is it, naming the permit) or ErrClosed
}

// WithObserver reports every lock operation to o (nil: ErrInvalidArgument).
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

// observeHold reports that an owner's hold of a lock began ("hold") or
// ended by a release ("free"); see Event.Op. Called outside the ledger's
// locks.
func (c *Client) observeHold(op string, k holdKey, kd kind, held time.Duration) {
	if c.opts.observer == nil {
		return
	}
	c.observe(context.Background(), Event{Op: op, Kind: kd.String(), Lock: k.name, Start: time.Now(), Held: held})
}
