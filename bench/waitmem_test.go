package main

import (
	"testing"

	"github.com/goredisson/goredisson/internal/testkit/redistest"
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
				heap, stack, err := parkRLock(srv.Addr, "wm:", n, names)
				if err != nil {
					b.Fatal(err)
				}
				reportWaiters(b, n, heap, stack)
			}
		})
		b.Run("lib=rueidislock tuned/names="+label, func(b *testing.B) {
			for range b.N {
				heap, stack, err := parkRueidislock(srv.Addr, "wm:", n, names)
				if err != nil {
					b.Fatal(err)
				}
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
