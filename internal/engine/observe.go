package engine

import (
	"context"
	"time"
)

// Event is one operation of a lock, or the loss of a hold, as the engine
// tells it: rlock.Event, field for field (rlock converts one into the
// other; its documentation says what each field holds).
type Event struct {
	Op        string
	Kind      string
	Lock      string
	Start     time.Time
	Duration  time.Duration
	Attempts  int
	Contended int
	Acquired  bool
	Held      time.Duration
	Err       error
}

// Observer receives a Client's events (WithObserver): rlock's Observer,
// adapted.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// Observe reports an event when the Client has an Observer.
func (c *Core) Observe(ctx context.Context, e Event) {
	if c != nil && c.cfg.Observer != nil {
		c.cfg.Observer.Observe(ctx, e)
	}
}

// Observed reports whether the Client has an Observer (nil-safe): events
// need not be built otherwise.
func (c *Core) Observed() bool { return c != nil && c.cfg.Observer != nil }

// observeHold reports that an owner's hold of a lock began ("hold") or
// ended by a release ("free"); see Event.Op. Called outside the ledger's
// locks.
func (c *Core) observeHold(op string, k holdKey, kd Kind, held time.Duration) {
	if c.cfg.Observer == nil {
		return
	}
	c.Observe(context.Background(), Event{Op: op, Kind: kd.String(), Lock: k.name, Start: time.Now(), Held: held})
}
