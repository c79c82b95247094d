package rlockotel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/goredisson/goredisson/rlock"
)

// SpanNamePrefix starts every span's name; the event's Op ends it.
const SpanNamePrefix = "goredisson "

// span records the event as a span from its start to its end, a child of
// the span in ctx.
func (o *Observer) span(ctx context.Context, e rlock.Event) {
	end := e.Start.Add(e.Duration)
	_, span := o.tracer.Start(ctx, SpanNamePrefix+e.Op,
		trace.WithTimestamp(e.Start),
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(o.spanAttributes(e)...))
	if e.Err != nil {
		span.RecordError(e.Err, trace.WithTimestamp(end))
		span.SetStatus(codes.Error, e.Err.Error())
	}
	span.End(trace.WithTimestamp(end))
}

// spanAttributes are the attributes of an event's span.
func (o *Observer) spanAttributes(e rlock.Event) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, len(o.attrs)+7)
	attrs = append(attrs, o.attrs...)
	attrs = append(attrs, KindKey.String(e.Kind), NameKey.String(e.Lock), OperationKey.String(e.Op))
	if opClass(e.Op) == opAcquisition {
		attrs = append(attrs, AttemptsKey.Int(e.Attempts), AcquiredKey.Bool(e.Acquired))
	}
	if e.Held > 0 {
		attrs = append(attrs, HoldDurationKey.Float64(e.Held.Seconds()))
	}
	if e.Err != nil {
		attrs = append(attrs, errorType(e.Err))
	}
	return attrs
}
