package rlock

import (
	"context"
	"time"
)

// Observer receives what a Client's locks do (WithObserver; the module
// rlockotel adapts it to OpenTelemetry). Observe is called on the goroutine
// that made the call (the watchdog's for a loss): it must be fast, not block,
// and not call back into the Client.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// Event is one operation of a lock, or the loss of a hold.
type Event struct {
	// Op is what happened: "lock", "trylock", "locktoken",
	// "trylocktoken", "acquire", "tryacquire" (acquisitions), "unlock",
	// "release", "forceunlock", "await", "extend", "lost" (a hold was
	// lost, or the Client closed while it was held), or a mark for gauges:
	// "wait" (an acquisition began), "hold" (an owner's first hold began),
	// "free" (its last hold was released). docs/observability.md pairs
	// them up.
	Op string
	// Kind is the lock type: "lock", "fairlock", "semaphore", ...
	Kind string
	// Lock is the lock's name (unbounded: normalise it before it becomes
	// a metric attribute).
	Lock string
	// Start is when the operation began, Duration how long it took.
	Start    time.Time
	Duration time.Duration
	// Attempts and Contended count an acquisition's attempts and those
	// that found it taken; Acquired reports that it took a hold.
	Attempts  int
	Contended int
	Acquired  bool
	// Held is how long the owner held the lock, on its last hold's end.
	Held time.Duration
	// Err is the operation's error (nil for a TryLock whose wait ran
	// out); for "lost", ErrLockLost or ErrClosed.
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

// observeHold reports that an owner's hold of a lock began ("hold") or
// ended by a release ("free"); see Event.Op. Called outside the ledger's
// locks.
func (c *Client) observeHold(op string, k holdKey, kd kind, held time.Duration) {
	if c.opts.observer == nil {
		return
	}
	c.observe(context.Background(), Event{Op: op, Kind: kd.String(), Lock: k.name, Start: time.Now(), Held: held})
}
