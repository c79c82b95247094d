package rlockotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/goredisson/goredisson/rlock"
)

// The instruments' names.
const (
	WaitDurationName = "goredisson.lock.wait.duration"
	AcquisitionsName = "goredisson.lock.acquisitions"
	ContentionName   = "goredisson.lock.contention"
	HoldDurationName = "goredisson.lock.hold.duration"
	LostName         = "goredisson.lock.lost"
	ErrorsName       = "goredisson.lock.errors"
	WaitCountName    = "goredisson.lock.wait.count"
	HoldCountName    = "goredisson.lock.hold.count"
)

// Bucket boundaries (seconds) advised for the histograms: the SDK's default
// ones are for milliseconds. Waits run from a round trip to the minutes of a
// queue; holds up to an hour-long job.
var (
	waitBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	holdBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600}
)

// instruments are the Observer's metrics.
type instruments struct {
	wait, hold                             metric.Float64Histogram
	acquisitions, contention, lost, errors metric.Int64Counter
	waiting, holding                       metric.Int64UpDownCounter
}

// newInstruments creates the instruments on m.
func newInstruments(m metric.Meter) (*instruments, error) {
	var i instruments
	var errs [8]error
	i.wait, errs[0] = m.Float64Histogram(WaitDurationName, metric.WithUnit("s"),
		metric.WithDescription("How long acquisitions of locks waited, by outcome."),
		metric.WithExplicitBucketBoundaries(waitBuckets...))
	i.acquisitions, errs[1] = m.Int64Counter(AcquisitionsName, metric.WithUnit("{acquisition}"),
		metric.WithDescription("Holds of locks taken."))
	i.contention, errs[2] = m.Int64Counter(ContentionName, metric.WithUnit("{attempt}"),
		metric.WithDescription("Acquisition attempts that found the lock taken."))
	i.hold, errs[3] = m.Float64Histogram(HoldDurationName, metric.WithUnit("s"),
		metric.WithDescription("How long owners held locks, until they released their last hold or lost it."),
		metric.WithExplicitBucketBoundaries(holdBuckets...))
	i.lost, errs[4] = m.Int64Counter(LostName, metric.WithUnit("{hold}"),
		metric.WithDescription("Holds of locks lost: lease ran out without renewal, force-unlocked, or the Client closed."))
	i.errors, errs[5] = m.Int64Counter(ErrorsName, metric.WithUnit("{error}"),
		metric.WithDescription("Lock operations that failed, by error.type."))
	i.waiting, errs[6] = m.Int64UpDownCounter(WaitCountName, metric.WithUnit("{wait}"),
		metric.WithDescription("Acquisitions of locks and semaphores, and latch awaits, in progress: goroutines waiting now."))
	i.holding, errs[7] = m.Int64UpDownCounter(HoldCountName, metric.WithUnit("{hold}"),
		metric.WithDescription("Locks held now: one per owner holding a lock, whatever its re-entry count."))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	return &i, nil
}

// record records the measurements of one event; base are the Observer's
// own attributes.
func (i *instruments) record(ctx context.Context, e rlock.Event, base []attribute.KeyValue) {
	kind := KindKey.String(e.Kind)
	op := OperationKey.String(e.Op)
	switch opClass(e.Op) {
	case opWaitBegin:
		i.waiting.Add(ctx, 1, with(base, kind))
		return
	case opHoldBegin:
		i.holding.Add(ctx, 1, with(base, kind))
		return
	case opHoldEnd:
		i.holding.Add(ctx, -1, with(base, kind))
		return
	case opAwait:
		i.waiting.Add(ctx, -1, with(base, kind))
	case opAcquisition:
		i.waiting.Add(ctx, -1, with(base, kind))
		i.acquisition(ctx, e, base, kind, op)
	case opRelease:
		if e.Held > 0 && e.Err == nil {
			i.hold.Record(ctx, e.Held.Seconds(), with(base, kind, op))
		}
	case opLost:
		i.lost.Add(ctx, 1, with(base, kind, errorType(e.Err)))
		if e.Held > 0 {
			i.hold.Record(ctx, e.Held.Seconds(), with(base, kind, op))
		}
		// Last: a reader that sees the hold gone sees its loss recorded.
		i.holding.Add(ctx, -1, with(base, kind))
		return
	}
	if e.Err != nil {
		i.errors.Add(ctx, 1, with(base, kind, op, errorType(e.Err)))
	}
}

// acquisition records the wait, the hold taken and the contention of an
// acquisition.
func (i *instruments) acquisition(ctx context.Context, e rlock.Event, base []attribute.KeyValue, kind, op attribute.KeyValue) {
	out := outcome(e)
	if out == OutcomeError {
		i.wait.Record(ctx, e.Duration.Seconds(), with(base, kind, op, OutcomeKey.String(out), errorType(e.Err)))
	} else {
		i.wait.Record(ctx, e.Duration.Seconds(), with(base, kind, op, OutcomeKey.String(out)))
	}
	kindOp := with(base, kind, op)
	if e.Acquired {
		i.acquisitions.Add(ctx, 1, kindOp)
	}
	if n := e.Contended; n > 0 {
		i.contention.Add(ctx, int64(n), kindOp)
	}
}

// with is a measurement's attributes: base and kv, in a new slice (base is
// shared by concurrent calls: appending to it could write into its array).
func with(base []attribute.KeyValue, kv ...attribute.KeyValue) metric.MeasurementOption {
	s := make([]attribute.KeyValue, 0, len(base)+len(kv))
	s = append(s, base...)
	s = append(s, kv...)
	return metric.WithAttributes(s...)
}
