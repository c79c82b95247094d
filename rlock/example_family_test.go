package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
)

// Every acquisition of a FencedLock returns a larger token. A storage that
// remembers the highest token it accepted refuses the write of a holder
// whose lease ran out while it was paused (GC, a stopped VM) and whose lock
// another owner took meanwhile.
func ExampleFencedLock() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb)
	defer client.Close()
	lock := client.NewFencedLock("example:fenced")

	var highest int64 // the storage's side
	write := func(token int64, what string) {
		if token < highest {
			fmt.Println("rejected:", what)
			return
		}
		highest = token
		fmt.Println("stored:", what)
	}

	slow, fast := ctxowner.New(context.Background()), ctxowner.New(context.Background())
	t1, _, _ := lock.TryLockToken(slow, 0, 50*time.Millisecond) // a short fixed lease
	time.Sleep(100 * time.Millisecond)                          // slow pauses past it
	t2, _ := lock.LockToken(fast)                               // fast gets the lock
	write(t2, "fast")
	write(t1, "slow") // slow wakes up and writes with its old token
	_ = lock.Unlock(fast)
	// Output:
	// stored: fast
	// rejected: slow
}

// A FairLock serves its waiters in the order they asked: here three owners
// queue behind the holder and get the lock in turn.
func ExampleFairLock() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb)
	defer client.Close()
	lock := client.NewFairLock("example:fair")
	ctx := context.Background()

	holder := ctxowner.New(ctx)
	_ = lock.Lock(holder)
	var wg sync.WaitGroup
	order := make(chan string, 3)
	for i, name := range []string{"ann", "bob", "cid"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := ctxowner.New(ctx)
			_ = lock.Lock(owner)
			order <- name
			_ = lock.Unlock(owner)
		}()
		// Let each one queue before the next asks.
		for rdb.LLen(ctx, "redisson_lock_queue:{example:fair}").Val() < int64(i+1) {
			time.Sleep(time.Millisecond)
		}
	}
	_ = lock.Unlock(holder)
	wg.Wait()
	close(order)
	for name := range order {
		fmt.Println(name)
	}
	// Output:
	// ann
	// bob
	// cid
}

// A SpinLock retries with backoff instead of waiting for an unlock message:
// here it gets the lock once the holder's 50 ms lease runs out.
func ExampleSpinLock() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb, rlock.WithSpinBackoff(time.Millisecond, 16*time.Millisecond))
	defer client.Close()
	lock := client.NewSpinLock("example:spin")

	_, _ = lock.TryLock(ctxowner.New(context.Background()), 0, 50*time.Millisecond)
	me := ctxowner.New(context.Background())
	ok, err := lock.TryLock(me, time.Second, 0)
	fmt.Println("held:", ok, err)
	_ = lock.Unlock(me)
	// Output: held: true <nil>
}

// Readers share a ReadWriteLock; a writer excludes them.
func ExampleReadWriteLock() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb)
	defer client.Close()
	rw := client.NewReadWriteLock("example:catalog")
	a, b := ctxowner.New(context.Background()), ctxowner.New(context.Background())

	_ = rw.ReadLock().Lock(a)
	okB, _ := rw.ReadLock().TryLock(b, 0, 0)
	okW, _ := rw.WriteLock().TryLock(ctxowner.New(context.Background()), 0, 0)
	fmt.Println("second reader:", okB, "writer:", okW)
	_ = rw.ReadLock().Unlock(a)
	_ = rw.ReadLock().Unlock(b)
	// Output: second reader: true writer: false
}

// A Semaphore bounds how many callers, in any process, work at once.
func ExampleSemaphore() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb)
	defer client.Close()
	ctx := context.Background()

	sem := client.NewSemaphore("example:downloads")
	_, _ = sem.TrySetPermits(ctx, 2) // once, by whoever sets the service up
	_ = sem.Acquire(ctx, 1)
	ok, _ := sem.TryAcquire(ctx, 2, 0) // two more: only one is left
	left, _ := sem.AvailablePermits(ctx)
	fmt.Println(ok, left)
	_ = sem.Release(ctx, 1)
	left, _ = sem.AvailablePermits(ctx)
	fmt.Println(left)
	_, _ = rdb.Del(ctx, "example:downloads").Result()
	// Output:
	// false 1
	// 2
}

// A PermitExpirableSemaphore's permits free themselves at the end of their
// lease, so a holder that dies does not keep one forever.
func ExamplePermitExpirableSemaphore() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb)
	defer client.Close()
	ctx := context.Background()

	sem := client.NewPermitExpirableSemaphore("example:seats")
	_, _ = sem.TrySetPermits(ctx, 1)
	id, _ := sem.Acquire(ctx, 10*time.Second) // the seat is ours for 10 s at most
	_, ok, _ := sem.TryAcquire(ctx, 0, time.Second)
	fmt.Println(len(id), ok)
	fmt.Println(sem.Release(ctx, id))
	fmt.Println(errors.Is(sem.Release(ctx, id), rlock.ErrNotHeld))
	_, _ = rdb.Del(ctx, "example:seats").Result()
	// Output:
	// 32 false
	// <nil>
	// true
}

// A CountDownLatch lets callers wait until others, anywhere, are done.
func ExampleCountDownLatch() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb)
	defer client.Close()
	ctx := context.Background()

	latch := client.NewCountDownLatch("example:shards-loaded")
	_, _ = latch.TrySetCount(ctx, 3)
	for range 3 {
		go func() { _ = latch.CountDown(ctx) }() // three loaders, in any process
	}
	_ = latch.Await(ctx)
	n, _ := latch.Count(ctx)
	fmt.Println("all loaded:", n == 0)
	// Output: all loaded: true
}

// Do is the critical section of a ported Spring @DistributedLock: it takes
// the lock (one attempt here), runs the function with a context that ends
// if the lock is lost, and unlocks.
func ExampleDo() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb)
	defer client.Close()
	lock := client.NewLock("example:nightly-report")

	err := rlock.Do(context.Background(), lock, 0, 0, func(ctx context.Context) error {
		fmt.Println("writing the report")
		return nil
	})
	fmt.Println(err)
	// Output:
	// writing the report
	// <nil>
}

// DoWait is Do for "wait until held, run, unlock": the context bounds the
// wait.
func ExampleDoWait() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb)
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	err := rlock.DoWait(ctx, client.NewLock("example:ledger"), 0, func(ctx context.Context) error {
		fmt.Println("posting the entry")
		return nil
	})
	fmt.Println(err)
	// Output:
	// posting the entry
	// <nil>
}
