package transport_test

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// processCPU returns the CPU time this process has used (a redis-server
// the test started is a child: not counted).
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPairs64 is bench (b)'s load for goredisson alone: 64 goroutines
// (32 per P on 2 cores), each taking and releasing a lock of its own, on a
// redis-server of the benchmark's own. It reports pairs/s and this
// process's CPU per pair (client-cpu-µs/pair): the transport's batches, two
// in flight per node, are what serves it.
func BenchmarkPairs64(b *testing.B) {
	srv, err := redistest.Start()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 64})
	b.Cleanup(func() { _ = rdb.Close() })
	c, err := rlock.NewClient(rdb)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	var seq atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	cpu := processCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := ctxowner.New(context.Background())
		l := c.NewLock("pairs64:" + strconv.FormatInt(seq.Add(1), 10))
		for pb.Next() {
			if err := l.Lock(ctx); err != nil {
				b.Error(err)
				return
			}
			if err := l.Unlock(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
	b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(b.N), "client-cpu-µs/pair")
}
