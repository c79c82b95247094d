package rlockotel_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gleak"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/goredisson/goredisson/rlock"
	"github.com/goredisson/goredisson/rlockotel"
	"github.com/goredisson/goredisson/rlocktest"
)

// The adapter, specified against real goredisson locks on a redis-server
// that the suite starts on a free loopback port (rlocktest) and stops by
// pid, with the SDK's in-memory metric reader and span recorder.

func TestRlockotel(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "rlockotel")
}

var server *rlocktest.Server

var _ = BeforeSuite(func() {
	var err error
	server, err = rlocktest.Start()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(server.Close()).To(Succeed()) })
})

// world is one spec's: an in-memory MeterProvider and TracerProvider, an
// Observer on them, and a go-redis client on a flushed server. At cleanup
// everything is closed and no goroutine may be left behind.
type world struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	mp     *sdkmetric.MeterProvider
	tp     *sdktrace.TracerProvider
	obs    *rlockotel.Observer
	raw    *redis.Client
}

// newWorld makes a world whose Observer has opts after the providers.
func newWorld(opts ...rlockotel.Option) *world {
	before := gleak.Goroutines()
	DeferCleanup(func() {
		Eventually(gleak.Goroutines).WithTimeout(5 * time.Second).ShouldNot(gleak.HaveLeaked(before))
	})
	w := &world{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	w.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(w.reader))
	w.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(w.spans))
	DeferCleanup(func() {
		Expect(w.tp.Shutdown(context.Background())).To(Succeed())
		Expect(w.mp.Shutdown(context.Background())).To(Succeed())
	})
	var err error
	w.obs, err = rlockotel.NewObserver(append([]rlockotel.Option{
		rlockotel.WithMeterProvider(w.mp), rlockotel.WithTracerProvider(w.tp)}, opts...)...)
	Expect(err).NotTo(HaveOccurred())
	w.raw = server.Client()
	DeferCleanup(w.raw.Close)
	Expect(w.raw.FlushAll(context.Background()).Err()).To(Succeed())
	return w
}

// client returns a goredisson Client on its own go-redis client that
// reports to the world's Observer; both are closed at cleanup.
func (w *world) client(opts ...rlock.Option) *rlock.Client {
	rdb := server.Client()
	DeferCleanup(rdb.Close)
	c, err := rlock.NewClient(rdb, append(opts, rlock.WithObserver(w.obs))...)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { _ = c.Close() })
	return c
}

// point is one data point of a metric: its attributes, and its value (a
// counter's) or count and sum (a histogram's).
type point struct {
	Attrs map[string]string
	Value int64
	Count uint64
	Sum   float64
}

// collect reads every metric of the Observer's scope, by name.
func (w *world) collect() map[string]metricdata.Metrics {
	GinkgoHelper()
	var rm metricdata.ResourceMetrics
	Expect(w.reader.Collect(context.Background(), &rm)).To(Succeed())
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != rlockotel.ScopeName {
			continue
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// points returns the data points of the metric name.
func (w *world) points(name string) []point {
	GinkgoHelper()
	var out []point
	switch d := w.collect()[name].Data.(type) {
	case metricdata.Sum[int64]:
		for _, dp := range d.DataPoints {
			out = append(out, point{Attrs: attrMap(dp.Attributes), Value: dp.Value})
		}
	case metricdata.Histogram[float64]:
		for _, dp := range d.DataPoints {
			out = append(out, point{Attrs: attrMap(dp.Attributes), Count: dp.Count, Sum: dp.Sum})
		}
	}
	return out
}

// total adds up, over the points of the metric name whose attributes
// include match, a counter's values or a histogram's counts.
func (w *world) total(name string, match map[string]string) int64 {
	GinkgoHelper()
	var n int64
	for _, p := range w.matching(name, match) {
		n += p.Value + int64(p.Count)
	}
	return n
}

// sum adds up the sums of the histogram name's points that match.
func (w *world) sum(name string, match map[string]string) float64 {
	GinkgoHelper()
	var s float64
	for _, p := range w.matching(name, match) {
		s += p.Sum
	}
	return s
}

// matching returns the points of the metric name whose attributes include
// match.
func (w *world) matching(name string, match map[string]string) []point {
	GinkgoHelper()
	var out []point
	for _, p := range w.points(name) {
		ok := true
		for k, v := range match {
			ok = ok && p.Attrs[k] == v
		}
		if ok {
			out = append(out, p)
		}
	}
	return out
}

// ended returns the ended spans named name, oldest first.
func (w *world) ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range w.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// attrMap is a set of attributes as strings.
func attrMap(s attribute.Set) map[string]string {
	out := map[string]string{}
	for _, kv := range s.ToSlice() {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}

// spanAttrs is a span's attributes as strings.
func spanAttrs(s sdktrace.ReadOnlySpan) map[string]string {
	return attrMap(attribute.NewSet(s.Attributes()...))
}

// m is shorthand for attribute matches.
type m = map[string]string
