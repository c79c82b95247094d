package rlock_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// BenchmarkLockUnlockSentinel: one owner, one key, Lock+Unlock pairs on a
// Sentinel setup (a primary, a replica, one Sentinel) through a
// FailoverClient, replica sync off (with it, the scripts go with WAIT
// through the flusher). cpu-µs/pair is the process's (getrusage: the
// Redis processes are others). The first 3 s are a warm-up: the lane starts once
// the Sentinels' hello named them (docs/benchmarks.md).
//
//	go test -run '^$' -bench LockUnlockSentinel -benchtime 5000x -count 3 ./rlock
func BenchmarkLockUnlockSentinel(b *testing.B) {
	topo, err := redistest.StartSentinels(1, 1)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = topo.Close() })
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: topo.MasterName, SentinelAddrs: topo.SentinelAddrs()})
	c, err := rlock.NewClient(rdb, rlock.WithReplicaSync(0, 0))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = c.Close()
		_ = rdb.Close()
	})
	ctx := ctxowner.New(context.Background())
	lock := c.NewLock("bench:sentinel")
	pair := func() {
		if err := lock.Lock(ctx); err != nil {
			b.Fatal(err)
		}
		if err := lock.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for warm := time.Now(); time.Since(warm) < 3*time.Second; {
		pair()
	}
	lat := make([]time.Duration, 0, 1<<16)
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		pair()
		if len(lat) < cap(lat) {
			lat = append(lat, time.Since(start))
		}
	}
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	b.ReportMetric(micros(cpu)/float64(b.N), "cpu-µs/pair")
	b.ReportMetric(micros(percentile(lat, 50)), "pair-p50-µs")
	b.ReportMetric(micros(percentile(lat, 99)), "pair-p99-µs")
}
