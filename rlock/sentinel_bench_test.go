package rlock_test

import (
	"context"
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

// BenchmarkLockUnlockSentinel: one owner, one key, Lock+Unlock pairs on a
// Sentinel setup (a primary, no replica or one, one Sentinel) through a
// FailoverClient, replica sync off (with it, the scripts go with WAIT
// through the flusher). cpu-µs/pair is the process's (getrusage: the
// Redis processes are others). The first 3 s are a warm-up: the lane starts once
// the Sentinels' hello named them (docs/benchmarks.md).
//
//	go test -run '^$' -bench LockUnlockSentinel -benchtime 5000x -count 3 ./rlock
func BenchmarkLockUnlockSentinel(b *testing.B) {
	for _, replicas := range []int{0, 1} {
		b.Run("replicas="+strconv.Itoa(replicas), func(b *testing.B) { benchSentinel(b, replicas) })
	}
}

func benchSentinel(b *testing.B, replicas int) {
	topo, err := redistest.StartSentinels(replicas, 1)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = topo.Close() })
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: topo.MasterName, SentinelAddrs: topo.SentinelAddrs()})
	var pooled atomic.Int64 // commands through the go-redis client's pool (not the lane)
	rdb.AddHook(poolCounter{&pooled})
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
	pooled0 := pooled.Load()
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
	b.ReportMetric(float64(pooled.Load()-pooled0)/float64(b.N), "pooled-cmds/pair")
	b.ReportMetric(micros(percentile(lat, 50)), "pair-p50-µs")
	b.ReportMetric(micros(percentile(lat, 99)), "pair-p99-µs")
}

// poolCounter counts the commands a go-redis client sends through its pool.
type poolCounter struct{ n *atomic.Int64 }

func (h poolCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h poolCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}
func (h poolCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}
