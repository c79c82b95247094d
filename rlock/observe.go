package rlock

import (
	"context"
	"time"

	"github.com/goredisson/goredisson/internal/engine"
)

// Observer receives a Client's lock events (WithObserver). Observe must be
// fast, must not block, and must not call back into the Client.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// Event is one operation of a lock, or the loss of a hold.
type Event struct {
	Op        string        // "lock", "trylock", "unlock", "lost", a gauge mark "wait", ... (docs/observability.md)
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

// observer adapts an Observer to the engine's: the engine's events are
// Events, field for field.
type observer struct{ o Observer }

func (a observer) Observe(ctx context.Context, e engine.Event) { a.o.Observe(ctx, Event(e)) }
