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

// The basic pattern: one Client per Redis deployment, a Lock per name,
// Lock and a deferred Unlock around the critical section.
func Example() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, err := rlock.NewClient(rdb)
	if err != nil {
		panic(err)
	}
	defer client.Close()

	ctx := ctxowner.New(context.Background()) // this request is the owner
	lock := client.NewLock("example:order:42")
	if err := lock.Lock(ctx); err != nil { // watchdog lease: renewed while held
		panic(err)
	}
	defer lock.Unlock(ctx)

	held, _ := lock.IsHeldByCurrent(ctx)
	fmt.Println("held:", held)
	// Output: held: true
}

// Locks are reentrant per owner, like Redisson's RLock: a nested call of
// the same owner takes the lock again and must unlock as often.
func ExampleLock_reentrant() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb)
	defer client.Close()
	ctx := ctxowner.New(context.Background())
	lock := client.NewLock("example:reentrant")

	var transfer func(depth int)
	transfer = func(depth int) {
		_ = lock.Lock(ctx)
		defer lock.Unlock(ctx)
		n, _ := lock.HoldCount(ctx)
		fmt.Println("depth", depth, "holds", n)
		if depth < 3 {
			transfer(depth + 1)
		}
	}
	transfer(1)
	locked, _ := lock.IsLocked(ctx)
	fmt.Println("locked after:", locked)
	// Output:
	// depth 1 holds 1
	// depth 2 holds 2
	// depth 3 holds 3
	// locked after: false
}

// TryLock waits at most the given time; a fixed lease (> 0) is never renewed.
func ExampleLock_TryLock() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb)
	defer client.Close()
	lock := client.NewLock("example:trylock")

	holder := ctxowner.New(context.Background())
	_ = lock.LockLease(holder, 10*time.Second)
	defer lock.Unlock(holder)

	other := ctxowner.New(context.Background())
	ok, err := lock.TryLock(other, 100*time.Millisecond, 5*time.Second)
	fmt.Println(ok, err)
	// Output: false <nil>
}

// Unlock by anyone but the owner fails with ErrNotHeld, naming the caller's
// owner and who holds the lock, and changes nothing.
func ExampleLock_Unlock_notHeld() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb)
	defer client.Close()
	lock := client.NewLock("example:not-held")

	holder := ctxowner.WithID(context.Background(), "job-8")
	if err := lock.Lock(holder); err != nil {
		panic(err)
	}
	defer lock.Unlock(holder)

	err := lock.Unlock(ctxowner.WithID(context.Background(), "job-7"))
	fmt.Println(errors.Is(err, rlock.ErrNotHeld))
	fmt.Println(err)
	// Output:
	// true
	// goredisson: unlock "example:not-held": lock not held by this owner (owner "ctx:job-7"; held by owner "ctx:job-8" of this client)
}

// LostContext ends the work of a critical section when the lock is lost
// (its lease ran out while Redis was unreachable, it was force-unlocked,
// another owner took it).
func ExampleLostContext() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb, rlock.WithWatchdogTimeout(time.Second))
	defer client.Close()
	ctx := ctxowner.New(context.Background())
	lock := client.NewLock("example:lost")
	_ = lock.Lock(ctx)

	work, stop := rlock.LostContext(ctx, lock)
	defer stop()
	_, _ = lock.ForceUnlock(context.Background()) // an operator breaks the lock

	<-work.Done() // noticed at the next renewal, within a third of a second here
	fmt.Println(errors.Is(context.Cause(work), rlock.ErrLockLost))
	// Output: true
}

// A fixed lease that the work outruns is moved further with Extend (as
// redsync's Extend and redislock's Refresh), instead of locking again: the
// hold stays one fixed lease, and LostContext's deadline moves with it.
func ExampleLock_Extend() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb)
	defer client.Close()
	ctx := ctxowner.New(context.Background())
	lock := client.NewLock("example:extend")

	if err := lock.LockLease(ctx, 2*time.Second); err != nil {
		panic(err)
	}
	defer lock.Unlock(ctx)
	// ... the job turns out to need longer:
	if err := lock.Extend(ctx, time.Minute); err != nil {
		panic(err) // ErrNotHeld: the lease ran out first
	}
	ttl, _ := lock.RemainTTL(ctx)
	fmt.Println("more than 50s left:", ttl > 50*time.Second)
	// Output: more than 50s left: true
}
