package rlockotel_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
	"github.com/goredisson/goredisson/rlockotel"
	"github.com/goredisson/goredisson/rlocktest"
)

// A Client's locks reported to an in-memory metric reader: a hold taken, a
// TryLock that found the lock taken, and the hold given back.
func Example() {
	srv, err := rlocktest.Start() // a throwaway redis-server
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	rdb := srv.Client()
	defer rdb.Close()

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	obs, err := rlockotel.NewObserver(rlockotel.WithMeterProvider(mp), rlockotel.WithTracing(false))
	if err != nil {
		fmt.Println(err)
		return
	}
	client, err := rlock.NewClient(rdb, rlock.WithObserver(obs))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	owner, other := ctxowner.New(context.Background()), ctxowner.New(context.Background())
	lock := client.NewLock("report")
	_ = lock.Lock(owner)
	_, _ = lock.TryLock(other, 0, 0) // one attempt: the lock is taken
	_ = lock.Unlock(owner)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range summary(rm) {
		fmt.Println(line)
	}
	// Output:
	// goredisson.lock.acquisitions {acquisition} kind=lock operation=lock: 1
	// goredisson.lock.contention {attempt} kind=lock operation=trylock: 1
	// goredisson.lock.hold.count {hold} kind=lock: 0
	// goredisson.lock.hold.duration s kind=lock operation=unlock: 1 recorded
	// goredisson.lock.wait.count {wait} kind=lock: 0
	// goredisson.lock.wait.duration s kind=lock operation=lock outcome=acquired: 1 recorded
	// goredisson.lock.wait.duration s kind=lock operation=trylock outcome=busy: 1 recorded
}

// summary is one sorted line per data point: the counters' values and the
// histograms' counts (durations vary from run to run).
func summary(rm metricdata.ResourceMetrics) []string {
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			head := m.Name + " " + m.Unit + " "
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("%s%s: %d", head, short(dp.Attributes), dp.Value))
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("%s%s: %d recorded", head, short(dp.Attributes), dp.Count))
				}
			}
		}
	}
	slices.Sort(lines)
	return lines
}

// short writes attributes as key=value without the goredisson.lock prefix.
func short(s attribute.Set) string {
	var out string
	for _, kv := range s.ToSlice() {
		if out != "" {
			out += " "
		}
		out += strings.TrimPrefix(string(kv.Key), "goredisson.lock.") + "=" + kv.Value.Emit()
	}
	return out
}

// The gauges while a lock is held and another owner waits for it, with the
// lock's name on the metrics, normalised by NormalizeLockName.
func ExampleWithLockName() {
	srv, err := rlocktest.Start()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	rdb := srv.Client()
	defer rdb.Close()

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	obs, err := rlockotel.NewObserver(rlockotel.WithMeterProvider(mp), rlockotel.WithTracing(false),
		rlockotel.WithLockName(nil)) // nil: rlockotel.NormalizeLockName
	if err != nil {
		fmt.Println(err)
		return
	}
	client, err := rlock.NewClient(rdb, rlock.WithObserver(obs))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	owner, other := ctxowner.New(context.Background()), ctxowner.New(context.Background())
	_ = client.NewLock("orders:42").Lock(owner)
	waited := make(chan error)
	go func() { waited <- client.NewLock("orders:43").Lock(other) }()
	<-waited // orders:43 was free: held by other now

	ctx, cancel := context.WithCancel(other)
	go func() { waited <- client.NewLock("orders:42").Lock(ctx) }()
	for gaugeValue(reader, rlockotel.WaitCountName) != 1 {
		runtime.Gosched() // until the waiter is in its wait
	}
	fmt.Println("while waiting:")
	printGauges(reader)

	cancel()
	<-waited
	_ = client.NewLock("orders:42").Unlock(owner)
	_ = client.NewLock("orders:43").Unlock(other)
	fmt.Println("at the end:")
	printGauges(reader)
	// Output:
	// while waiting:
	// goredisson.lock.hold.count {hold} kind=lock name=orders:*: 2
	// goredisson.lock.wait.count {wait} kind=lock name=orders:*: 1
	// at the end:
	// goredisson.lock.hold.count {hold} kind=lock name=orders:*: 0
	// goredisson.lock.wait.count {wait} kind=lock name=orders:*: 0
}

// printGauges prints the summary lines of the two gauges.
func printGauges(reader *sdkmetric.ManualReader) {
	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, line := range summary(rm) {
		if strings.Contains(line, ".count ") {
			fmt.Println(line)
		}
	}
}

// gaugeValue is the sum of a gauge's points.
func gaugeValue(reader *sdkmetric.ManualReader, name string) int64 {
	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == name {
				for _, dp := range s.DataPoints {
					n += dp.Value
				}
			}
		}
	}
	return n
}
