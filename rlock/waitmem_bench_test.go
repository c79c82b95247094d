package rlock_test

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// BenchmarkWaiterMemory parks 10,000 Lock waiters of one Client on locks
// held elsewhere (a hash another owner holds, for 10 minutes) and reports
// what each waiter costs the process: the growth of HeapAlloc+StackInuse
// (after two GCs) from before the waiters started to when they all wait,
// divided by the waiters. "one" parks them all on one name, "many" each on
// a name of its own. It measures memory, not time: run it once,
//
//	go test -run '^$' -bench WaiterMemory -benchtime 1x ./rlock
//
// WAITMEM_HEAPPROFILE=file writes the heap (run with -memprofilerate 1) and
// goroutine profiles of the parked waiters to file.1 / file.g1 (one name)
// and file.10000 / file.g10000. bench/ has the row beside rueidislock.
func BenchmarkWaiterMemory(b *testing.B) {
	const n = 10000
	for _, names := range []int{1, n} {
		label := "one"
		if names > 1 {
			label = "many"
		}
		b.Run(label, func(b *testing.B) {
			for range b.N {
				heap, stack := parkWaiters(b, n, names)
				b.ReportMetric(float64(heap+stack)/n, "B/waiter")
				b.ReportMetric(float64(heap)/n, "heap-B/waiter")
				b.ReportMetric(float64(stack)/n, "stack-B/waiter")
			}
		})
	}
}

// parkWaiters starts n waiters on names names (held elsewhere), waits until
// they all wait, and returns the heap and stack growth; the waiters leave
// before it returns.
func parkWaiters(b *testing.B, n, names int) (heap, stack int64) {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	prefix := "waitmem:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	name := func(i int) string { return prefix + strconv.Itoa(i%names) }
	pipe := rdb.Pipeline()
	for i := range names {
		pipe.HSet(ctx, name(i), "elsewhere:1", 1)
		pipe.PExpire(ctx, name(i), 10*time.Minute)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}
	defer func() {
		p := rdb.Pipeline()
		for i := range names {
			p.Del(ctx, name(i))
		}
		_, _ = p.Exec(ctx)
	}()
	c, err := rlock.NewClient(rdb)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	// Warm up: one waiter that gives up, so that the Client's connections,
	// goroutines and script cache exist before the baseline.
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_ = c.NewLock(name(0)).Lock(ctxowner.WithID(wctx, "warm"))
	cancel()

	before := redistest.MemAfterGC()
	wctx, stop := context.WithCancel(ctx)
	// What each waiter needs is made before the waiters start (and
	// counted): its lock handle and owner. Each waiter's goroutine then
	// only calls Lock, so its frame is not the benchmark's.
	locks := make([]*rlock.Lock, n)
	owners := make([]context.Context, n)
	for i := range n {
		locks[i] = c.NewLock(name(i))
		owners[i] = ctxowner.WithID(wctx, "w"+strconv.Itoa(i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go lockAndTell(&wg, errs, locks[i], owners[i])
	}
	g0 := runtime.NumGoroutine()
	if err := redistest.WaitQuiet(rdb, 2*time.Minute); err != nil {
		b.Fatal("the waiters did not settle: ", err)
	}
	after := redistest.MemAfterGC()
	if os.Getenv("WAITMEM_HEAPPROFILE") != "" {
		b.Logf("goroutines: %d while parked, %d before", runtime.NumGoroutine(), g0)
	}
	if f := os.Getenv("WAITMEM_HEAPPROFILE"); f != "" {
		out, _ := os.Create(f + "." + strconv.Itoa(names))
		_ = pprof.Lookup("heap").WriteTo(out, 0)
		out.Close()
		out, _ = os.Create(f + ".g" + strconv.Itoa(names))
		_ = pprof.Lookup("goroutine").WriteTo(out, 1)
		out.Close()
	}
	stop()
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatalf("a waiter ended while waiting: %v", err)
	}
	return int64(after.HeapAlloc) - int64(before.HeapAlloc), int64(after.StackInuse) - int64(before.StackInuse)
}

// lockAndTell locks l for owner and sends the error if the lock ended before
// owner's ctx.
func lockAndTell(wg *sync.WaitGroup, errs chan<- error, l *rlock.Lock, owner context.Context) {
	defer wg.Done()
	err := l.Lock(owner)
	if owner.Err() == nil {
		errs <- err // nobody may get the lock, nor fail
	}
}
