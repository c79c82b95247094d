package rlockotel

import (
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// config is what the options set.
type config struct {
	mp      metric.MeterProvider
	tp      trace.TracerProvider
	metrics bool
	tracing bool
	attrs   []attribute.KeyValue
	name    func(string) string // WithLockName's normaliser; nil: off
	errs    []error
}

// Option configures NewObserver.
type Option func(*config)

// newConfig applies opts over the defaults: the global providers, metrics
// and spans on.
func newConfig(opts []Option) (*config, error) {
	c := &config{
		mp:      otel.GetMeterProvider(),
		tp:      otel.GetTracerProvider(),
		metrics: true,
		tracing: true,
	}
	for _, o := range opts {
		o(c)
	}
	return c, errors.Join(c.errs...)
}

// WithMeterProvider records the metrics through mp (default: the global
// MeterProvider, otel.GetMeterProvider(), as it is when NewObserver runs).
// A nil mp is an error of NewObserver.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) {
		if mp == nil {
			c.errs = append(c.errs, errors.New("rlockotel: nil MeterProvider"))
			return
		}
		c.mp = mp
	}
}

// WithTracerProvider records the spans through tp (default: the global
// TracerProvider, otel.GetTracerProvider(), as it is when NewObserver runs).
// A nil tp is an error of NewObserver.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) {
		if tp == nil {
			c.errs = append(c.errs, errors.New("rlockotel: nil TracerProvider"))
			return
		}
		c.tp = tp
	}
}

// WithMetrics turns the metrics on or off (default: on).
func WithMetrics(on bool) Option {
	return func(c *config) { c.metrics = on }
}

// WithTracing turns the spans on or off (default: on).
func WithTracing(on bool) Option {
	return func(c *config) { c.tracing = on }
}

// WithAttributes adds attrs to every measurement and span (default: none),
// e.g. the name of the component that owns the locks. Keep them of low
// cardinality: they become metric attributes.
func WithAttributes(attrs ...attribute.KeyValue) Option {
	return func(c *config) { c.attrs = append(c.attrs, attrs...) }
}
