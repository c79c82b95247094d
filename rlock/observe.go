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
	//
	// Three more Ops mark when something begins or ends rather than an
	// operation, so that gauges can be kept from the events alone:
	//   - "wait": an acquisition (or a latch's "await") began. It is sent
	//     before the first attempt, with the acquisition's Start (Duration
	//     zero); exactly one event of the acquisition's own Op follows on
	//     the same goroutine when it ends, however it ends (held, wait run
	//     out, context ended, error, invalid argument, Client closed). The
	//     goroutines waiting now are the "wait" events less those ends.
	//   - "hold": an owner's hold of a lock began: Redis confirmed its first
	//     hold (the Client knew of none, or only of a lost one). Re-entries
	//     send none. Exactly one "free" or "lost" of the same Kind and Lock
	//     ends it (a "lost" comes from the watchdog's goroutine: for a hold
	//     lost at once, it may arrive before the "hold"), so the holds now
	//     are the "hold" events less the "free" and "lost" ones.
	//   - "free": an owner's hold of a lock ended by a release: its last
	//     hold was given back (or the release found it gone, or may not
	//     have taken effect: the Client no longer counts it either way).
	//     It is sent before the release's own "unlock" event.
	// "hold" and "free" are sent with context.Background() (from inside
	// the acquisition or release that caused them), "lost" too. Semaphore
	// permits and latches are not holds: no "hold" or "free" for them.
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
	// hold's acquisition), set when its last hold was given back or lost
	// (on "unlock", "free" and "lost").
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

// observeHold reports that an owner's hold of a lock began ("hold") or
// ended by a release ("free"); see Event.Op. Called outside the ledger's
// locks.
func (c *Client) observeHold(op string, k holdKey, kd kind, held time.Duration) {
	if c.opts.observer == nil {
		return
	}
	c.observe(context.Background(), Event{Op: op, Kind: kd.String(), Lock: k.name, Start: time.Now(), Held: held})
}
