package main

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// BenchmarkWaiterMemory is issue 32's memory row: 10,000 waiters parked on
// locks held elsewhere (keys written by another connection, held for 10
// minutes), on one name ("one") or each on a name of its own ("many"), for
// goredisson RLock and rueidislock tuned (KeyMajority 1, NoLoopTracking,
// TryNextAfter 1 s, as in the other rows), on a private redis-server. It
// reports the process's HeapAlloc+StackInuse growth per waiter, read after
// two GCs, from before the waiters' handles were made to when Redis has
// seen no command for a second. Each waiter has a lock handle of its own.
// A memory measurement, not a timed one. Run each row in a process of its
// own (a process reuses the goroutines and stacks of an earlier row), e.g.
// docs/benchmarks.md's loop:
//
//	go test -run '^$' -bench 'WaiterMemory/lib=goredisson_RLock/names=one$' -benchtime 1x
func BenchmarkWaiterMemory(b *testing.B) {
	srv, err := redistest.Start()
	if err != nil {
		b.Skip("no redis-server:", err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	const n = 10000
	for _, names := range []int{1, n} {
		label := "one"
		if names > 1 {
			label = "many"
		}
		b.Run("lib=goredisson RLock/names="+label, func(b *testing.B) {
			for range b.N {
				heap, stack := parkRLock(b, srv.Addr, n, names)
				reportWaiters(b, n, heap, stack)
			}
		})
		b.Run("lib=rueidislock tuned/names="+label, func(b *testing.B) {
			for range b.N {
				heap, stack := parkRueidislock(b, srv.Addr, n, names)
				reportWaiters(b, n, heap, stack)
			}
		})
	}
}

func reportWaiters(b *testing.B, n int, heap, stack int64) {
	b.ReportMetric(float64(heap+stack)/float64(n), "B/waiter")
	b.ReportMetric(float64(heap)/float64(n), "heap-B/waiter")
	b.ReportMetric(float64(stack)/float64(n), "stack-B/waiter")
}

// holdElsewhere writes the keys that make names held by another process
// (key(i) for i < names), and returns a func that deletes them.
func holdElsewhere(b *testing.B, rdb *redis.Client, names int, hold func(p redis.Pipeliner, i int)) func() {
	b.Helper()
	ctx := context.Background()
	p := rdb.Pipeline()
	for i := range names {
		hold(p, i)
	}
	if _, err := p.Exec(ctx); err != nil {
		b.Fatal(err)
	}
	return func() { _ = rdb.FlushAll(ctx).Err() }
}

func parkRLock(b *testing.B, addr string, n, names int) (heap, stack int64) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	name := func(i int) string { return "wm:" + strconv.Itoa(i%names) }
	defer holdElsewhere(b, rdb, names, func(p redis.Pipeliner, i int) {
		p.HSet(ctx, name(i), "elsewhere:1", 1)
		p.PExpire(ctx, name(i), 10*time.Minute)
	})()
	c, err := rlock.NewClient(rdb)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	warm, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_ = c.NewLock(name(0)).Lock(ctxowner.WithID(warm, "warm"))
	cancel()
	return park(b, rdb, n, func(ctx context.Context, n int) []func() error {
		waits := make([]func() error, n)
		for i := range n {
			l, owner := c.NewLock(name(i)), ctxowner.WithID(ctx, "w"+strconv.Itoa(i))
			waits[i] = func() error { return l.Lock(owner) }
		}
		return waits
	})
}

func parkRueidislock(b *testing.B, addr string, n, names int) (heap, stack int64) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	name := func(i int) string { return "wm:" + strconv.Itoa(i%names) }
	defer holdElsewhere(b, rdb, names, func(p redis.Pipeliner, i int) {
		p.Set(ctx, "rueidislock:0:"+name(i), "elsewhere", 10*time.Minute)
	})()
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   rueidis.ClientOption{InitAddress: []string{addr}},
		KeyMajority:    1,
		NoLoopTracking: true,
		TryNextAfter:   time.Second,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	warm, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, _, _ = l.WithContext(warm, name(0))
	cancel()
	return park(b, rdb, n, func(ctx context.Context, n int) []func() error {
		waits := make([]func() error, n)
		for i := range n {
			key := name(i)
			waits[i] = func() error {
				_, _, err := l.WithContext(ctx, key)
				return err
			}
		}
		return waits
	})
}

// park makes n waits (each must block until ctx ends), runs each on a
// goroutine of its own, waits until they all wait, and returns the heap and
// stack growth. What a waiter needs (a lock handle, an owner, a name) is
// made before the goroutines start, and counted; each goroutine only calls
// its wait, so that the parked stack is the library's.
func park(b *testing.B, rdb *redis.Client, n int, prepare func(ctx context.Context, n int) []func() error) (heap, stack int64) {
	b.Helper()
	before := redistest.MemAfterGC()
	ctx, stop := context.WithCancel(context.Background())
	waits := prepare(ctx, n)
	var wg sync.WaitGroup
	ended := make(chan error, n)
	for _, wait := range waits {
		wg.Add(1)
		go waitAndTell(ctx, &wg, ended, wait)
	}
	if err := redistest.WaitQuiet(rdb, 2*time.Minute); err != nil {
		b.Fatal("the waiters did not settle: ", err)
	}
	after := redistest.MemAfterGC()
	stop()
	wg.Wait()
	close(ended)
	for err := range ended {
		b.Fatalf("a waiter ended while the lock was held elsewhere: %v", err)
	}
	return int64(after.HeapAlloc) - int64(before.HeapAlloc), int64(after.StackInuse) - int64(before.StackInuse)
}

// waitAndTell runs wait and sends its error if it ended before ctx.
func waitAndTell(ctx context.Context, wg *sync.WaitGroup, ended chan<- error, wait func() error) {
	defer wg.Done()
	err := wait()
	if ctx.Err() == nil {
		ended <- err
	}
}
