package rlockotel

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/goredisson/goredisson/rlock"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/goredisson/goredisson/rlockotel"

// The attributes of the metrics and spans (see the package documentation).
const (
	// KindKey is the lock type: "lock", "fairlock", "spinlock", ...
	KindKey = attribute.Key("goredisson.lock.kind")
	// OperationKey is the event's Op: "lock", "trylock", "unlock", ...
	OperationKey = attribute.Key("goredisson.lock.operation")
	// OutcomeKey is how an acquisition ended: OutcomeAcquired, OutcomeBusy
	// or OutcomeError.
	OutcomeKey = attribute.Key("goredisson.lock.outcome")
	// NameKey is the lock's name: on spans as it is, and on metrics only
	// with WithLockName, normalised.
	NameKey = attribute.Key("goredisson.lock.name")
	// AttemptsKey is how many acquire scripts an acquisition ran; spans
	// only.
	AttemptsKey = attribute.Key("goredisson.lock.attempts")
	// AcquiredKey reports that an acquisition took a hold; spans only.
	AcquiredKey = attribute.Key("goredisson.lock.acquired")
	// HoldDurationKey is how long the owner held the lock, in seconds, on
	// the span of the release that gave its last hold back; spans only.
	HoldDurationKey = attribute.Key("goredisson.lock.hold.duration")
)

// The values of OutcomeKey.
const (
	OutcomeAcquired = "acquired" // the acquisition took a hold
	OutcomeBusy     = "busy"     // its wait ran out with the lock taken
	OutcomeError    = "error"    // it failed (error.type says why)
)

// Observer is an rlock.Observer that records metrics and spans; give it to
// rlock.NewClient with rlock.WithObserver. One Observer may serve many
// Clients. It is safe for concurrent use.
type Observer struct {
	tracer trace.Tracer // nil: no spans
	m      *instruments // nil: no metrics
	attrs  []attribute.KeyValue
	name   func(string) string // nil: no lock name on metrics
}

var _ rlock.Observer = (*Observer)(nil)

// NewObserver returns an Observer that records through the providers of
// the options (default: OpenTelemetry's global providers). It fails when an
// option is invalid or an instrument cannot be created.
func NewObserver(opts ...Option) (*Observer, error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	o := &Observer{attrs: c.attrs, name: c.name}
	if c.metrics {
		if o.m, err = newInstruments(c.mp.Meter(ScopeName)); err != nil {
			return nil, err
		}
	}
	if c.tracing {
		o.tracer = c.tp.Tracer(ScopeName)
	}
	return o, nil
}

// Observe records one event: its metrics, and its span as a child of the
// span in ctx. It implements rlock.Observer.
func (o *Observer) Observe(ctx context.Context, e rlock.Event) {
	if ctx == nil {
		ctx = context.Background()
	}
	if e.Start.IsZero() {
		e.Start = time.Now().Add(-e.Duration)
	}
	if o.m != nil {
		base := o.attrs
		if o.name != nil {
			base = append(append(make([]attribute.KeyValue, 0, len(o.attrs)+1), o.attrs...), NameKey.String(o.name(e.Lock)))
		}
		o.m.record(ctx, e, base)
	}
	if o.tracer != nil && opClass(e.Op) < opWaitBegin {
		o.span(ctx, e)
	}
}

// Kinds of events, by Op.
const (
	opAcquisition = iota // a wait for a hold or permit
	opRelease            // a hold or permit given back
	opLost               // a hold lost
	opAwait              // a latch's wait: span, errors and the wait gauge
	opOther              // anything else: span and errors only
	// The marks of rlock.Event.Op that begin or end a state (gauges only,
	// no span): they come after the operations, which all have spans.
	opWaitBegin // "wait": an acquisition or Await began
	opHoldBegin // "hold": an owner's hold of a lock began
	opHoldEnd   // "free": it ended by a release ("lost" ends one too)
)

// opClass sorts an event's Op into its kind of event.
func opClass(op string) int {
	switch op {
	case "lock", "trylock", "locktoken", "trylocktoken", "acquire", "tryacquire":
		return opAcquisition
	case "unlock", "release":
		return opRelease
	case "lost":
		return opLost
	case "await":
		return opAwait
	case "wait":
		return opWaitBegin
	case "hold":
		return opHoldBegin
	case "free":
		return opHoldEnd
	}
	return opOther
}

// outcome is how an acquisition ended.
func outcome(e rlock.Event) string {
	switch {
	case e.Err != nil:
		return OutcomeError
	case e.Acquired:
		return OutcomeAcquired
	}
	return OutcomeBusy
}
