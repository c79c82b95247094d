package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
)

// A payment scheduler lets one run at a time hold a permit whose lease
// frees it if the runner dies. A run that outgrows its lease extends it as
// it goes (Redisson's updateLeaseTime), so that a second run cannot start
// while the first still works.
func ExamplePermitExpirableSemaphore_UpdateLeaseTime() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb)
	defer client.Close()
	ctx := context.Background()

	runs := client.NewPermitExpirableSemaphore("example:payment-runs")
	_, _ = runs.TrySetPermits(ctx, 1)
	id, _ := runs.Acquire(ctx, 30*time.Second) // freed 30 s after a crash
	for batch := 1; batch <= 3; batch++ {
		// ... pay one batch, then keep the permit for 30 s more.
		extended, _ := runs.UpdateLeaseTime(ctx, id, 30*time.Second)
		fmt.Println("batch", batch, "done, lease extended:", extended)
	}
	_, second, _ := runs.TryAcquire(ctx, 0, 30*time.Second)
	fmt.Println("a second run may start:", second)
	left, _ := runs.LeaseTime(ctx, id)
	fmt.Println("lease left at most 30 s:", left > 0 && left <= 30*time.Second)

	_ = runs.Release(ctx, id)
	extended, _ := runs.UpdateLeaseTime(ctx, id, 30*time.Second)
	fmt.Println("a released permit is extended:", extended)
	_, err := runs.LeaseTime(ctx, id)
	fmt.Println(errors.Is(err, rlock.ErrNotHeld))
	_, _ = rdb.Del(ctx, "example:payment-runs", "{example:payment-runs}:timeout").Result()
	// Output:
	// batch 1 done, lease extended: true
	// batch 2 done, lease extended: true
	// batch 3 done, lease extended: true
	// a second run may start: false
	// lease left at most 30 s: true
	// a released permit is extended: false
	// true
}

// A workflow limiter (5 runs per tenant) keeps each run's permit for as
// long as the run takes: the Client renews its lease, and the run's context
// ends if the permit is lost.
func ExamplePermitExpirableSemaphore_AcquireKept() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb)
	defer client.Close()
	ctx := context.Background()

	runs := client.NewPermitExpirableSemaphore("example:tenant-7:runs")
	_, _ = runs.TrySetPermits(ctx, 5)
	permit, err := runs.AcquireKept(ctx) // waits for a free permit
	if err != nil {
		panic(err)
	}
	work, stop := permit.LostContext(ctx)
	defer stop()
	// ... run the workflow with work, however long it takes.
	fmt.Println("running:", work.Err() == nil)
	fmt.Println("released:", permit.Release(ctx) == nil)
	fmt.Println(errors.Is(permit.Release(ctx), rlock.ErrNotHeld))
	_, _ = rdb.Del(ctx, "example:tenant-7:runs", "{example:tenant-7:runs}:timeout").Result()
	// Output:
	// running: true
	// released: true
	// true
}

// A faster multilock locks many values of one group at once, all or none,
// with one script on one hash (Redisson's getMultiLock(group, values)): here
// the students of a class, while one of their records is edited.
func ExampleClient_NewFasterMultiLock() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb)
	defer client.Close()
	ctx := context.Background()

	editor := ctxowner.New(ctx)
	students := client.NewFasterMultiLock("example:class_100", "Jack_001", "Mary_002")
	if err := students.Lock(editor); err != nil {
		panic(err)
	}
	other := ctxowner.New(ctx)
	overlap, _ := client.NewFasterMultiLock("example:class_100", "Mary_002", "Tom_003").TryLock(other, 0, 0)
	fmt.Println("Mary_002 and Tom_003:", overlap)
	tom := client.NewFasterMultiLock("example:class_100", "Tom_003")
	free, _ := tom.TryLock(other, 0, 0)
	fmt.Println("Tom_003 alone:", free)
	fields, _ := rdb.HLen(ctx, "example:class_100").Result()
	fmt.Println("fields in the class's hash:", fields) // 3 per locked value

	_ = tom.Unlock(other)
	_ = students.Unlock(editor)
	locked, _ := students.IsLocked(ctx)
	fmt.Println("locked after:", locked)
	// Output:
	// Mary_002 and Tom_003: false
	// Tom_003 alone: true
	// fields in the class's hash: 9
	// locked after: false
}

// A non-reentrant fair lock grants waiters the lock in the order they asked
// and refuses its holder a second hold (Redisson's
// getNonReentrantFairLock).
func ExampleClient_NewNonReentrantFairLock() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb)
	defer client.Close()
	ctx := ctxowner.New(context.Background())

	lock := client.NewNonReentrantFairLock("example:ledger-close")
	_ = lock.Lock(ctx)
	err := lock.Lock(ctx) // a nested call of the same owner
	fmt.Println(errors.Is(err, rlock.ErrReentry))
	n, _ := lock.HoldCount(ctx)
	fmt.Println("holds:", n)
	_ = lock.Unlock(ctx)
	// Output:
	// true
	// holds: 1
}

// A release whose reply was lost (the connection died) may have taken
// effect: it must not be taken as "not released" and sent again, which
// could create a permit.
func ExampleErrUnknownOutcome() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb)
	defer client.Close()
	ctx := context.Background()

	slots := client.NewSemaphore("example:upload-slots")
	_, _ = slots.TrySetPermits(ctx, 1)
	_ = slots.Acquire(ctx, 1)
	err := slots.Release(ctx, 1)
	switch {
	case errors.Is(err, rlock.ErrUnknownOutcome):
		fmt.Println("released or not: check AvailablePermits, do not release again")
	case err != nil:
		fmt.Println("not released:", err)
	default:
		fmt.Println("released")
	}
	_, _ = slots.Delete(ctx)
	// Output:
	// released
}
